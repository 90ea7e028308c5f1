"""BabyAI: a fully observed minigrid room with a ball, a box, a key and a door.

``layout`` (state vector), ``grid`` (the minigrid world), ``legality``, ``success`` (pure
success and reward), ``tasks``, ``instructions``, ``expert`` (breadth-first-search planner),
``domain`` (:class:`BabyAIDomain`) and ``env`` (:class:`BabyAIEnv`).
"""
