"""Resumable turns (§14): ``engine`` runs one turn on tether's loop, recording every step
(``recorder``, ``state``) as events and checkpoints (``records``, ``data``) into a journal
(``journal``) through the host's ports (``ports``, ``tools``), so a turn cut off anywhere is
resumed or replayed (``replay``) without running a call twice."""
