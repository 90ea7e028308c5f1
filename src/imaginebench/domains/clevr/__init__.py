"""CLEVR-Robot: five balls on a table, pushed one at a time to follow language instructions.

Modules: :mod:`.physics` (MuJoCo model, push), :mod:`.tasks`, :mod:`.instructions`,
:mod:`.success` (pure success and reward functions), :mod:`.expert`, :mod:`.domain`
(:class:`ClevrDomain`) and :mod:`.env` (:class:`ClevrEnv`).
"""
