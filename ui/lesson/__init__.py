"""The Lesson page's sections and its own copy of the group."""
