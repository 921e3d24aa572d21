"""The local web page (``karyamorph dashboard``) and the static HTML report (``karyamorph report``).

Nothing is imported here: the main CLI imports the commands in :mod:`karyamorph.cli.dashboard`,
which load the web stack only when they run. The server is :mod:`.server`, the routes :mod:`.routes` and
:mod:`.workbench`, the tiles :mod:`.run_view` and :mod:`.tiles`, the report :mod:`.report`.
"""
