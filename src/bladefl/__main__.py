"""``python -m bladefl``: the same command line as ``bladefl`` (the workflow's rules call the tools
through the Python that runs the workflow, so a job needs no ``bladefl`` on its PATH)."""

from bladefl.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
