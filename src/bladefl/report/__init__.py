"""The report wing, above every other but the entry points: the pages, figures and documents made from a results folder
or a kept bundle. Start at ``front_page`` (the findings first), ``pages`` (the front pages written) and
``page_html`` (each executed notebook as a page); ``findings`` and ``verdict_rows`` say how verdicts read, ``paper``
and ``distance`` put the paper's tables beside ours (``readings_beside``: the same design under another reading
beside them), ``views``, ``plots``, ``bound_plots``, ``bound_text``, ``sensitivity``, ``sensitivity_plots``,
``calibration`` and ``calibration_plots`` make the pages' content (``calibration_outcome`` holds a study's outcome
to its schema), ``findings_doc``, ``summary_doc`` and ``bundle_diff`` the documents and the diff (``bundle_read``: a
kept bundle read as hostile, for each of them) (``regenerate``: every generated page as one command), ``inputs`` and
``index_inputs`` (the front page's, read before its figure), ``page_parameters``, ``execution``, ``tables``,
``bundle_design`` and ``paper_figures`` the rest."""
