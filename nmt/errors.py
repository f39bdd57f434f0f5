"""The one exception a user can cause: bad config, missing or malformed data, a bad checkpoint.

Scripts catch it and print its message without a traceback; the message says what to do.
"""


class NMTError(Exception):
    """An error caused by the user's input, with a message that says how to fix it."""
