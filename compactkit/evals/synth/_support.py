"""The customer-support domain: an agent resolving an order problem across systems."""

from __future__ import annotations

import random

from compactkit.evals.synth import _text as text
from compactkit.evals.synth._domain import Domain, Ending, Update
from compactkit.evals.synth._styles import Run
from compactkit.items import Tool

__all__ = ["Support"]

_CONSTRAINTS = (
    "Never promise a refund above 200 EUR without a supervisor's approval.",
    "Reply to the customer in German; internal notes stay in English.",
    "Do not share other customers' data, even partially.",
    "Always quote the order number in every reply.",
    "Escalate to tier 2 if the customer mentions a chargeback.",
    "Keep replies under 120 words.",
    "Never change the payment method on file yourself.",
)
_LATE = (
    "Heads-up from the supervisor: do not offer vouchers this week, only refunds or replacements.",
    "Also, log every action in the ticket's internal notes.",
)
_DECISIONS = (
    (
        "I'll offer a replacement instead of a refund because the item is back in stock and the customer prefers it.",
        ("replacement instead of a refund",),
    ),
    (
        "Decision: split the shipment into two parcels, because the warehouse in Leipzig has only one unit.",
        ("two parcels",),
    ),
)
_DEAD_ENDS = (
    (
        "I tried re-running the address validation, but the carrier API keeps rejecting the umlaut in the street name, so I gave up on that path and will ask the customer.",
        ("address validation",),
    ),
)
_LANG = (
    "Hallo, mein Paket ist immer noch nicht angekommen. Können Sie bitte nachsehen? 🙏",
    "こんにちは、注文の状況を教えてください。",
    "Bonjour, la commande est arrivée abîmée — je voudrais un échange.",
    "Hola, ¿pueden cambiar la dirección de entrega? Gracias.",
)


class Support(Domain):
    """Resolving a customer's order problem."""

    name = "support"
    late_constraints = _LATE
    decisions = _DECISIONS
    dead_ends = _DEAD_ENDS
    tools = (
        Tool(
            name="lookup_order",
            description="Fetch an order by its number.",
            parameters={
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        ),
        Tool(
            name="issue_refund",
            description="Refund an order (amount in EUR).",
            parameters={
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "amount": {"type": "string"}},
                "required": ["order_id", "amount"],
            },
        ),
        Tool(
            name="search_kb",
            description="Search the help-centre knowledge base.",
            parameters={
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        ),
    )

    def __init__(self) -> None:
        self.order = "ORD-000000"
        self.customer = ""

    def system(self) -> str:
        return (
            "You are a customer support agent for Nordlicht Outdoor GmbH. You work tickets with "
            "the order system, the refund tool and the knowledge base, and you draft replies as "
            "files under replies/. Be accurate and polite; never invent order data."
        )

    def opening(self, rng: random.Random) -> tuple[str, list[str]]:
        self.order = f"ORD-{rng.randint(2026000, 2026999)}-{rng.randint(10, 99)}"
        self.customer = text.person(rng)
        goal = (
            f"Ticket from {self.customer}: order {self.order} arrived damaged and they want it "
            "sorted out. Please investigate and resolve it end to end."
        )
        return goal, rng.sample(_CONSTRAINTS, rng.randint(3, 5))

    def workspace(self, rng: random.Random, scale: float) -> dict[str, str]:
        return {
            "kb/returns_policy.md": "# Returns policy\n\n"
            + text.prose(rng, max(4, int(12 * scale)))
            + "\n",
            "kb/shipping_zones.md": "# Shipping zones\n\n"
            + text.prose(rng, max(4, int(8 * scale)))
            + "\n",
            "replies/template_de.md": "Sehr geehrte*r Kund*in,\n\nvielen Dank für Ihre Nachricht.\n\nMit freundlichen Grüßen\nIhr Nordlicht-Team\n",
            "notes/ticket_log.md": "# Internal notes\n\n- ticket opened\n",
        }

    def new_file(self, rng: random.Random, scale: float) -> tuple[str, str]:
        name = rng.choice(("antwort", "reply", "escalation", "refund_note"))
        body = (
            f"Betreff: Ihre Bestellung {self.order}\n\n"
            + text.prose(rng, max(2, int(4 * scale)))
            + "\n\n"
            + rng.choice(_LANG)
            + "\n"
        )
        return f"replies/{name}_{text.hexid(rng, 4)}.md", body

    def failing_run(self, rng: random.Random, path: str) -> tuple[Run, str]:
        n = rng.randint(100, 999)
        kind = rng.randrange(3)
        if kind == 0:
            amount = f"{rng.randint(201, 480)}.{rng.randint(10, 99)}"
            error = f"PermissionError: role 'tier1' cannot refund {amount} EUR on {self.order} (limit 200.00)"
            run = Run(
                f"crm refund {self.order} --amount {amount}",
                error,
                ("issue_refund", {"order_id": self.order, "amount": amount}),
                True,
            )
            return run, error
        if kind == 1:
            error = f"HTTP 409 Conflict: replacement already requested for {self.order} (case {n})"
            return Run(
                f"crm replace {self.order}", error, ("lookup_order", {"order_id": self.order}), True
            ), error
        error = f"CarrierAPIError: address rejected (code {n}): invalid character in street name"
        return Run(f"carrier validate --order {self.order}", error, None, True), error

    def passing_run(self, rng: random.Random, scale: float) -> Run:
        lines = [f"{self.order}  status: shipped  carrier: DHL  parcels: 1"]
        for _ in range(max(2, int(10 * scale))):
            lines.append(
                f"  2026-11-{rng.randint(2, 27):02d}  {rng.choice(('in transit', 'sorted', 'arrived at hub', 'out for delivery'))}  {rng.choice(('Leipzig', 'Kassel', 'Wien', 'Zürich', 'Malmö'))}"
            )
        return Run(
            f"crm order show {self.order}",
            "\n".join(lines),
            ("lookup_order", {"order_id": self.order}),
        )

    def bulky_run(self, rng: random.Random, lines: int) -> Run:
        if rng.random() < 0.5:
            return Run(
                "crm tickets list --status open --json", text.json_records(rng, max(1, lines // 7))
            )
        rows = "\n".join(
            f"kb/{rng.choice(text.WORDS)}_{rng.choice(text.WORDS)}.md: {text.prose(rng, 1)}"
            for _ in range(lines)
        )
        return Run("grep -r 'damaged' kb/", rows, ("search_kb", {"query": "damaged item"}))

    def identifier_run(self, rng: random.Random) -> tuple[Run, str, str]:
        if rng.random() < 0.5:
            tracking = f"JJD{rng.randint(10**14, 10**15 - 1)}"
            out = f"{self.order}: return label created\ntracking: {tracking}\nlabel: https://labels.example.com/{text.token(rng, 8)}.pdf"
            return (
                Run(f"crm return-label {self.order}", out),
                tracking,
                "Creating the return label.",
            )
        case = f"CAS-{rng.randint(100000, 999999)}"
        out = f"escalation opened: {case}\nqueue: tier2-logistics\nowner: {text.person(rng)}"
        return (
            Run(f"crm escalate {self.order} --queue tier2-logistics", out),
            case,
            "Escalating to logistics.",
        )

    def recall_run(self, rng: random.Random) -> tuple[Run, str]:
        fact = f"refund total {rng.randint(20, 199)}.{rng.randint(10, 99)} EUR"
        out = f"{self.order}\nitems: 2\n{fact}\nmethod: original payment"
        return Run(
            f"crm refund-quote {self.order}", out, ("lookup_order", {"order_id": self.order})
        ), fact

    def update(self, rng: random.Random, index: int) -> Update:
        if index % 2 == 0:
            old = f"Lindenstraße {rng.randint(1, 90)}, 04109 Leipzig"
            new = f"Müllerweg {rng.randint(1, 90)}, 1010 Wien"
            return Update(
                "delivery address",
                ("shipping address", "address"),
                old,
                new,
                f"The customer's delivery address is {old}.",
                f"The customer just wrote back: the delivery address is now {new}.",
                None,
            )
        old_d, new_d = rng.choice((("Friday", "Monday"), ("Tuesday", "Thursday")))
        return Update(
            "pickup day",
            ("pickup",),
            old_d,
            new_d,
            f"The carrier pickup day is {old_d}.",
            f"Update: the carrier moved the pickup day to {new_d}.",
            None,
        )

    def ending(self, rng: random.Random, workspace: dict[str, str]) -> Ending:
        return Ending(
            state="Current state: the replacement is booked and the German reply is drafted.",
            state_phrases=("replacement is booked",),
            next_step="Next step: send the reply and close the ticket after the customer confirms.",
            next_phrases=("close the ticket",),
            final_user="Send it, please.",
            pending=Run(
                f"crm reply {self.order} --file replies/final.md",
                "",
                ("lookup_order", {"order_id": self.order}),
            ),
        )
