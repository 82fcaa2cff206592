"""The advantage doctor: name the pipeline bugs around an estimator from a logged batch.

    from crbc.doctor import diagnose, from_groups
    findings = diagnose(from_groups(groups, iteration=3), expect="grpo")
    for f in findings:
        print(f.to_json())        # crbc.doctor/1 (docs/FORMATS.md, "An advantage doctor")

:mod:`.registry` (every check with its severity, order and meaning: :data:`CHECKS`),
:mod:`.findings` (the record, its example rows and the exit status), :mod:`.batch` (what is
examined), :mod:`.row_checks`, :mod:`.token_checks` (with :mod:`.gae`) and :mod:`.weight_checks`
(the checks), :mod:`.expect` (``estimator_mismatch``), :mod:`.diagnose` (all of them),
:mod:`.sources` (the files ``crbc doctor`` reads), :mod:`.recorded` (the recorder's counts as
findings) and :mod:`.examine` (a source or a run with its recorded findings: what the command
line, the report and the studio read). In a verl trainer: :func:`crbc.integrations.verl.doctor`.
``import crbc`` is enough: ``crbc.doctor`` is imported on first use.
"""

from crbc.doctor.batch import Batch, Tokens, from_groups
from crbc.doctor.diagnose import counts, diagnose, diagnose_all, diagnose_tokens
from crbc.doctor.examine import Examined, diagnose_iteration, examine_run
from crbc.doctor.findings import CHECKS, SCHEMA, Example, Finding, exit_status, from_dict, table
from crbc.doctor.recorded import recorded_findings, with_recorded

__all__ = ["CHECKS", "SCHEMA", "Batch", "Example", "Examined", "Finding", "Tokens", "counts", "diagnose",
           "diagnose_all", "diagnose_iteration", "diagnose_tokens", "examine_run", "exit_status",
           "from_dict", "from_groups", "recorded_findings", "table", "with_recorded"]
