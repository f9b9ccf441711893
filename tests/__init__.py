"""Tests; a package so helpers import as ``from tests.openai_standin import OpenAIStandin``."""
