from . import agent  # noqa: F401  (ADK's api_server looks for `agent.root_agent`)
