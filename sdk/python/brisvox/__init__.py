"""brisvox: write brisvox voice agents in Python.

An agent is a websocket server that the brisvox server connects to for each
call (the agent link, docs/AGENT_PROTOCOL.md). Declare tools and event
handlers on an Agent and run it:

    from brisvox import Agent, CallContext

    agent = Agent()

    @agent.tool
    async def order_status(ctx: CallContext, order_id: str) -> dict:
        '''Status of an order by its id.'''
        return {"order_id": order_id, "status": "shipped"}

    agent.run(port=9000)
"""

from .agent import Agent, CallContext
from .protocol import (
    PROTOCOL_VERSION,
    BotInterrupted,
    BotStartedSpeaking,
    BotStoppedSpeaking,
    BotText,
    CallEnded,
    CallStarted,
    ContextMessage,
    Dtmf,
    Error,
    Event,
    ProtocolError,
    ToolCall,
    TurnMetrics,
    UserStartedSpeaking,
    UserStoppedSpeaking,
    UserTranscript,
    parse_event,
)
from .tools import Tool, ToolError

__all__ = [
    "PROTOCOL_VERSION",
    "Agent",
    "BotInterrupted",
    "BotStartedSpeaking",
    "BotStoppedSpeaking",
    "BotText",
    "CallContext",
    "CallEnded",
    "CallStarted",
    "ContextMessage",
    "Dtmf",
    "Error",
    "Event",
    "ProtocolError",
    "Tool",
    "ToolCall",
    "ToolError",
    "TurnMetrics",
    "UserStartedSpeaking",
    "UserStoppedSpeaking",
    "UserTranscript",
    "parse_event",
]
