"""Bodies: wrappers between the environment and an agent (preprocessing states, postprocessing actions)."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import torch

from rlconf.agents import AgentWrapper, NotExportable, ParallelAgent, PolicyGraph, TestAgent
from rlconf.core import StateArray
from rlconf.core.layout import layout_of


class Body(AgentWrapper, ParallelAgent):
    """The identity body. Subclasses override ``process_state`` and ``process_action``.

    To the loop a body is an agent; to the agent it is the environment. It wraps the test agent too, so an
    evaluated agent sees the same preprocessing it learned with. A body's settings are keyword arguments of
    its constructor after ``agent``, and ``transform_space`` takes the same ones.
    """

    def __init__(self, agent):
        self.agent = agent

    @classmethod
    def transform_space(cls, space: gym.Space, **settings: Any) -> gym.Space:
        """The observation space the agent will see, given the environment's: a classmethod, because the
        agent is built against it before the body that wraps the agent exists."""
        return space

    def act(self, states: StateArray) -> torch.Tensor:
        return self.process_action(self.agent.act(self.process_state(states)))

    def process_state(self, states: StateArray) -> StateArray:
        return states

    def process_action(self, actions: torch.Tensor) -> torch.Tensor:
        return actions

    def test_agent(self) -> TestAgent:
        body = copy.copy(self)
        body.agent = self.agent.test_agent()
        body._forget()  # the test agent plays its own environments
        return body

    def transform_observation(self, observations: torch.Tensor) -> torch.Tensor:
        """What this (test) body does to a batch of observations, when that depends on them alone."""
        return observations

    def exported_feeding(self) -> tuple[str, Callable[[gym.Space], gym.Space]] | None:
        """For a body that keeps something per environment (a frame stack), which an exported graph of one
        observation cannot: how the caller does its work instead, and the observation space it hands on
        (``transform_space`` with this body's settings). None: the body's test preprocessing is
        ``transform_observation``, which goes into the graph."""
        return None

    def policy_graph(self) -> PolicyGraph:
        """The agent's graph with this body's preprocessing in front, or its work left to the caller."""
        graph = self.agent.policy_graph()
        feeding = self.exported_feeding()
        if feeding is not None:
            return graph.fed_by_caller(*feeding)
        if graph.feeding and type(self).transform_observation is not Body.transform_observation:
            raise NotExportable(f"{type(self).__name__} transforms observations before the caller's part "
                                f"({graph.feeding[0]}), so a graph cannot begin with it; export a run without "
                                "one of the two")
        return graph.preceded_by(self.transform_observation)

    def lane(self, copies: slice) -> Body:
        """This body for one group of the environment's copies (the alternating sampler steps two groups in
        turn): a copy with per-copy state of its own (frame stacks, time features ...), sharing what is learned
        (the agent, running statistics), that hands its states to the agent as those copies' (``Lane``)."""
        body = copy.copy(self)
        body.agent = self.agent.lane(copies) if isinstance(self.agent, Body) else Lane(self.agent, copies)
        body._forget()
        return body

    def _forget(self) -> None:
        """Drop what this body keeps per copy of the environment (a copy of it plays other copies)."""


class Lane(AgentWrapper, ParallelAgent):
    """An agent acting for one group of its environments' copies, ``copies`` (the alternating sampler): the
    states are handed over as those copies' (``act(states, lanes=copies)``, which agents that declare
    ``alternates`` take)."""

    def __init__(self, agent, copies: slice):
        self.agent = agent
        self.copies = copies

    def act(self, states: StateArray) -> torch.Tensor:
        return self.agent.act(states, lanes=self.copies)

    def test_agent(self) -> TestAgent:
        return self.agent.test_agent()


def refuse_structured(space: gym.Space, needs: str, instead: str = "") -> None:
    """A TypeError (the user's choice of body: one line, ``body=NAME: ...``) when ``space`` is a structured
    observation's packed rows, which a body that works on one array cannot take. ``needs``: what it needs;
    ``instead``: what gives a structured observation what the body would have given."""
    layout = layout_of(space)
    if layout is not None:
        raise TypeError(f"needs {needs}; the observation is a {type(layout.space).__name__} of "
                        f"{', '.join(layout.without_mask().keys)}; allowed: body=none or body=frame_stack (with "
                        f"body.normalize_observations=true to normalise its float vector keys){instead}")


def body_options(body_class: type[Body], settings: Any) -> dict[str, Any]:
    """The body settings (a ``BodySettings`` or a dict) that ``body_class`` takes as keyword arguments:

        options = body_options(body_class, settings.body)
        space = body_class.transform_space(env.observation_space, **options)   # build the agent for it
        body = body_class(agent, **options)

    The body config is one flat group, so a setting another body uses (``frame_stack`` with body none)
    is simply not passed. A body that reads packed rows also takes ``observation_space``, the space it is built
    for (not a setting: build.agent passes it)."""
    values = settings if isinstance(settings, dict) else vars(settings)
    accepted = inspect.signature(body_class).parameters
    return {key: value for key, value in values.items()
            if key in accepted and key not in ("agent", "name", "observation_space")}
