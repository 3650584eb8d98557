"""Categories of views, boards and screens: the v1 configuration API."""
