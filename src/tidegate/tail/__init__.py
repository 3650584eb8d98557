"""Live tail: the HTTP stream and the WebSocket that follow an account's new lines, and
their checks that the subscriber may still read. The broker they subscribe to is the log
store's (``logs.tail``): every writer of lines publishes there."""
