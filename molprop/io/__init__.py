"""Input and output files: molecule tables with per-row issues (:mod:`molprop.io.table`),
structure files as tables (:mod:`molprop.io.structures`), chunked input readers
(:mod:`molprop.io.readers`) and the crash-safe CSV output of streaming prediction
(:mod:`molprop.io.sink`). Structure records themselves are parsed in :mod:`molprop.chem`."""
