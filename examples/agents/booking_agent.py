"""A flow agent: takes a table booking step by step, then ends the call.

    python3 examples/agents/booking_agent.py           # ws://127.0.0.1:9000

Each step of the flow is a prompt plus the one tool the model may call in it
(as in a Pipecat flow's nodes): the name, then the date, then the caller's
confirmation. When a tool has what it needs it moves the call to the next
step with `update_context`; `confirm_booking` books the table and ends the
call with a goodbye. The steps live in the call's `ctx.state`.
"""

import argparse
import logging
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "sdk" / "python"))

from brisvox import Agent, CallContext, CallStarted, ToolError  # noqa: E402

PROMPTS = {
    "name": "You take table bookings for Luigi's. Ask for the name of the booking, then call set_name.",
    "date": "You take table bookings for Luigi's. Ask which day the table is for, then call set_date.",
    "confirm": (
        "You take table bookings for Luigi's. Read the booking back to the caller and, when they "
        "agree, call confirm_booking."
    ),
}

#: Bookings made, as (name, date): the example's "database".
BOOKINGS: list[tuple[str, str]] = []

agent = Agent()


async def go_to(ctx: CallContext, step: str) -> None:
    ctx.state["step"] = step
    await ctx.update_context(system_prompt=PROMPTS[step])


@agent.on("call.started")
async def start(ctx: CallContext, event: CallStarted):
    if not event.resumed:
        await go_to(ctx, "name")


@agent.tool
async def set_name(ctx: CallContext, name: str) -> str:
    """Records the name the booking is under.

    Args:
        name: The caller's name.
    """
    ctx.state["name"] = name.strip()
    await go_to(ctx, "date")
    return f"The booking is under {ctx.state['name']}. Now ask for the day."


@agent.tool
async def set_date(ctx: CallContext, date: str) -> str:
    """Records the day the table is for.

    Args:
        date: The day, as the caller said it.
    """
    if "name" not in ctx.state:
        raise ToolError("ask for the name first")
    ctx.state["date"] = date.strip()
    await go_to(ctx, "confirm")
    return f"A table for {ctx.state['name']} on {ctx.state['date']}. Ask the caller to confirm."


@agent.tool
async def confirm_booking(ctx: CallContext) -> str:
    """Books the table once the caller has confirmed the name and the day."""
    if "date" not in ctx.state:
        raise ToolError("the booking needs a name and a day first")
    booking = (ctx.state["name"], ctx.state["date"])
    BOOKINGS.append(booking)
    await ctx.end_call(
        say=f"You're booked, {booking[0]}, for {booking[1]}. Goodbye!", reason="booked"
    )
    return "booked"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    agent.run(host=args.host, port=args.port)


if __name__ == "__main__":
    main()
