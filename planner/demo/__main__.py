"""``python -m planner.demo``: the demo server with the tests' defaults; prints ``PORT <n>`` once listening."""

from planner.demo.server import main

main()
