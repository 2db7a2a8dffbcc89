"""The chain wing: the blockchain of BLADE-FL's rounds (steps 2-4). Its modules: ``transactions``
(signed model transactions), ``pow`` (proof-of-work mining), ``round`` (signing, the mining race and
validation on the uploads' digests), ``ledger`` (blocks, majority validation, the ledger),
``ledger_file`` (a saved ledger read as hostile), ``verify`` (``bladefl chain verify``) and ``anchors``
(records of chains kept outside the run folder)."""
