"""What a person sees on a terminal while a command runs: ``guard`` (an error as one line, exit codes, no
traceback) and ``progress`` (progress bars on stderr when it is a terminal). Infrastructure: every layer may
import these.
"""
