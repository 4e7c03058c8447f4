"""Protocol stand-ins for inference servers (TGI, ...), validated against their published specs."""
