"""Jobs whose size a user controls, each run in a worker process under CPU, memory and time
limits, at a lower priority, with progress and Cancel (:mod:`.worker`). These are resource bounds
for a shared server, not isolation: a job reads only what it is given and writes only its own
folder, but it runs as the server's user.

:mod:`.upload` reads, keys and merges an upload, :mod:`.keying` applies an anchor key,
:mod:`.run_archive` reads a run uploaded as a .zip, :mod:`.jobqueue` bounds the long jobs (audits)
the whole server runs at once. It sits just above ``process`` (an upload's merge statistics).
"""
