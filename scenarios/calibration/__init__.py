"""Twin experiments for ``swe calibrate``: synthetic gauge records from known parameters plus
noise, and the priors and forward model to recover them with NUTS.

Each file defines ``forward(params) -> swe.Result``, ``priors``, ``observations``, ``noise``
and ``TRUTH``: ``swe calibrate scenarios/calibration/<name>.py`` (or ``swe calibrate <name>``
once installed).
"""
