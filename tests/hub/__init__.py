"""A local stand-in for the Hugging Face Hub, for offline tests of model resolution."""
