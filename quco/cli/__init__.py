"""The quco-emu command line: main.py (the parser, the exit codes of every error, Ctrl-C and
SIGTERM), common.py (what the commands share), one module per area of commands. Nothing
below this layer imports it.
"""
