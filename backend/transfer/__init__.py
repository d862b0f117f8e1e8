"""Transfer: a whole world in and out as one document, and the bundled towns.

Owns: no table of its own. It reads and replaces every table of a world as a unit (export, import, wipe,
reset, the demo town's first load): the document's shape (document.py), its row checks (check.py,
validation.py, against the sections' tables in models.py), the bundled towns (demo.py, towns/) and the SQL
that moves whole worlds (repo.py).
Imports: world, memory, planning, emotion, intention, conversation (models), council (models), jobs,
storage, errors, gametime, ids. Imported by api and app (and the `machi world` CLI).
"""
