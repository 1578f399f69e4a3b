from tests.fakes.openai_fixtures import *  # noqa: F403
