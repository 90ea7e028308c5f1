"""Meta-World: Sawyer-arm manipulation tasks of the ``metaworld`` package on one 91-dim state.

Modules: :mod:`.layout` (the entity-slot state), :mod:`.tasks`, :mod:`.instructions`,
:mod:`.success` (pure success and reward functions, Meta-World's thresholds), :mod:`.physics`
(metaworld's environments, the composite locked-door scene, state read/write), :mod:`.expert`
(metaworld's scripted policies, composed for staged tasks), :mod:`.domain`
(:class:`MetaWorldDomain`), :mod:`.env` (:class:`MetaWorldEnv`) and :mod:`.agreement` (how
often the state-based success rules agree with metaworld's own ``info["success"]``).
"""
