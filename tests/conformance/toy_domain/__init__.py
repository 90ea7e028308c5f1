"""Lamps-v0: a sixth domain in one folder, to show that adding a domain needs nothing outside it
but one registry line (:data:`imaginebench.envs.registry.ENV_SPECS`).  Three lamps in a row;
an action toggles one; the instruction names the lamps to light."""
