"""A lookup agent: two tools the model can call, answered from local data.

    python3 examples/agents/lookup_agent.py            # ws://127.0.0.1:9000
    python3 examples/agents/lookup_agent.py --port 9100

brisvox connects to it for every call (the agent file's `[agent_link] url`,
see lookup.toml), announces its tools to the model and runs them when the
model calls them. Needs only the SDK (sdk/python) and `websockets`.
"""

import argparse
import logging
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "sdk" / "python"))

from brisvox import Agent, CallContext, CallStarted, ToolError  # noqa: E402

ORDERS = {
    "42": {"status": "shipped", "carrier": "UPS", "eta": "Friday"},
    "7": {"status": "packing", "eta": "next week"},
}
HOURS = {
    "monday": "9 to 17", "tuesday": "9 to 17", "wednesday": "9 to 17",
    "thursday": "9 to 20", "friday": "9 to 17", "saturday": "10 to 14",
}

agent = Agent()


@agent.tool
async def order_status(ctx: CallContext, order_id: str) -> dict:
    """Status of an order by its number.

    Args:
        order_id: The order number on the caller's receipt.
    """
    order = ORDERS.get(order_id.strip().lstrip("#"))
    if order is None:
        raise ToolError(f"there is no order {order_id}")
    return order


@agent.tool
async def opening_hours(ctx: CallContext, day: str) -> str:
    """Opening hours of the shop on a day of the week.

    Args:
        day: The day, for example "monday".
    """
    return HOURS.get(day.strip().lower(), "closed")


@agent.on("call.started")
async def greet_returning_customers(ctx: CallContext, event: CallStarted):
    if ctx.metadata.get("customer"):
        await ctx.update_context(
            messages=[{"role": "system", "content": f"The caller is customer {ctx.metadata['customer']}."}]
        )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    agent.run(host=args.host, port=args.port)


if __name__ == "__main__":
    main()
