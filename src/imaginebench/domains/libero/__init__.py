"""LIBERO: pick-and-place with a Panda arm in LIBERO-Object's scene, on one 44-dim state.

Modules: :mod:`.layout` (the state and the scene's measured geometry), :mod:`.tasks`,
:mod:`.instructions`, :mod:`.success` (pure success and reward functions), :mod:`.domain`
(:class:`LiberoDomain`, legality), :mod:`.physics` (the LIBERO/robosuite simulator: the BDDL
scene, resets, state read/write, rendering), :mod:`.expert` (scripted waypoint controller) and
:mod:`.env` (:class:`LiberoEnv`).  Only :mod:`.physics` imports ``libero``/``robosuite``.
"""
