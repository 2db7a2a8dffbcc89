"""The theory wing: the paper's analytical results, with no runs. Its modules: ``bound`` (G(K), its
lazy version, K*), ``claims`` (the paper's qualitative claims as checks), ``certificate`` (what the
bound's form allows before any constant is fitted), ``constant_scan`` and ``theorem_scans`` (the
corollaries and theorems over a scan of constants), ``fit`` (the bound fitted to runs as an upper bound)
and ``reference`` (the reference optimum w*)."""
