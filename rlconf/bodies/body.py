"""Bodies: wrappers between the environment and an agent (preprocessing states, postprocessing actions)."""

from __future__ import annotations

import copy

import torch

from rlconf.agents import ParallelAgent, TestAgent
from rlconf.core import StateArray


class Body(ParallelAgent):
    """The identity body. Subclasses override ``process_state`` and ``process_action``.

    To the loop a body is an agent; to the agent it is the environment. It wraps the test agent too, so an
    evaluated agent sees the same preprocessing it learned with.
    """

    def __init__(self, agent):
        self.agent = agent

    def act(self, states: StateArray) -> torch.Tensor:
        return self.process_action(self.agent.act(self.process_state(states)))

    def process_state(self, states: StateArray) -> StateArray:
        return states

    def process_action(self, actions: torch.Tensor) -> torch.Tensor:
        return actions

    def test_agent(self) -> TestAgent:
        body = copy.copy(self)
        body.agent = self.agent.test_agent()
        return body

    def state_dict(self) -> dict:
        return self.agent.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.agent.load_state_dict(state)
