"""Every built-in agent's spec: its schema (the ``Config`` dataclass its ``configs/agent/<name>.yaml`` is
checked against), its class (an import path, imported only when the agent is built) and what it declares it
can do (``AgentSpec``). One torch-free module per algorithm module of ``rlconf.agents`` (``specs/dqn.py``
beside ``agents/dqn.py``), each registering its specs with ``rlconf.register`` as a user's plugin module does:
checking a config imports these, never torch, so ``rlconf run ... --cfg job`` and every refusal of bad input
answer in a fraction of a second.
"""

from rlconf.agents.specs._plays import ACTION_KINDS, Plays
from rlconf.agents.specs._spec import AgentSpec

__all__ = ["ACTION_KINDS", "AgentSpec", "Plays"]
