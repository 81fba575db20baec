"""ToyDroid: the brief's synthetic phone-control environment (brief Sec. 5).

Episodes in the AndroidControl action format: a goal, and per step a screen (a list of UI
elements, shuffled on every screen) and the deterministic expert's action. Four task
families (messaging, settings toggle, shop search, note deletion), each with a step the
element *text* cannot solve (a text-less icon, the top one of identical "Add" buttons, or a
list screen that only history tells apart). Everything is drawn from a seeded numpy
Generator, so a seed fixes the data.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from papers.limac.episodes import Action, Element, Episode, Step

# ------------------------------------------------------------------ vocabulary (brief Sec. 5)

CONTACTS = (
    "alice",
    "bob",
    "carol",
    "david",
    "emma",
    "frank",
    "grace",
    "henry",
    "irene",
    "jack",
    "karen",
    "leo",
    "maria",
    "nora",
    "oscar",
    "paula",
    "quinn",
    "rita",
    "sam",
    "tina",
)
SETTINGS = (
    "wifi",
    "bluetooth",
    "airplane mode",
    "dark theme",
    "location",
    "auto rotate",
    "battery saver",
    "do not disturb",
    "hotspot",
    "nfc",
    "vibration",
    "night light",
)
SHOP_ITEMS = (
    "headphones",
    "coffee beans",
    "running shoes",
    "backpack",
    "desk lamp",
    "water bottle",
    "phone case",
    "yoga mat",
    "notebook",
    "sunglasses",
)
MESSAGES = (
    "see you soon",
    "running late",
    "call me back",
    "happy birthday",
    "on my way",
    "thanks a lot",
)
NOTE_TITLES = (
    "groceries",
    "meeting agenda",
    "travel plans",
    "book list",
    "workout",
    "recipes",
    "ideas",
    "gift list",
    "todo",
    "garden",
)
APPS = ("Messages", "Settings", "Shop", "Notes", "Camera", "Clock", "Maps", "Music")
ADS = ("sale 50 off today", "try premium free", "new update available", "win a prize")
VARIANTS = ("pro", "basic", "deluxe")

FAMILIES = ("messages", "settings", "shop", "notes")
ACTION_TYPES = (
    "click",
    "long_press",
    "input_text",
    "open_app",
    "navigate_back",
    "navigate_home",
    "wait",
    "scroll_down",
    "scroll_up",
)  # the toy's 9 types (brief Sec. 5)
ELEMENT_CLASSES = ("text", "icon", "list_item", "edit", "switch", "button", "list")
ICONS = ("none", "menu", "send", "search", "cart", "back", "call", "attach", *APPS)
ITEMS_PER_PAGE = 4  # contacts and settings rows per list page
GLYPH_SEED = 1234  # the icons' fixed random 8x8 glyphs (brief Sec. 5)


def glyphs() -> np.ndarray:
    """(len(ICONS), 64) fixed binary glyphs, RNG 1234; "none" is all zeros."""
    table = np.random.default_rng(GLYPH_SEED).integers(0, 2, size=(len(ICONS), 64))
    table[0] = 0
    return table.astype(np.float32)


# ------------------------------------------------------------------ screens


def _row_box(row: int, x0: float = 0.05, x1: float = 0.8) -> tuple[float, float, float, float]:
    y0 = 0.15 + 0.15 * row
    return (x0, y0, x1, y0 + 0.12)


def _chrome(rng: np.random.Generator) -> list[Element]:
    """What every screen has: a status-bar clock, a menu icon and 0-2 promo texts."""
    hour, minute = rng.integers(0, 24), rng.integers(0, 60)
    chrome = [
        Element(f"{hour:02d}:{minute:02d}", "text", (0.02, 0.005, 0.15, 0.035)),
        Element("", "icon", (0.9, 0.05, 0.98, 0.1), icon="menu", clickable=True),
    ]
    for k, ad in enumerate(rng.choice(len(ADS), size=rng.integers(0, 3), replace=False)):
        chrome.append(Element(ADS[ad], "text", (0.1, 0.86 + 0.06 * k, 0.9, 0.91 + 0.06 * k)))
    return chrome


def _screen(
    rng: np.random.Generator, elements: list[Element], target: Element | None = None
) -> tuple[tuple[Element, ...], int | None]:
    """Add the chrome, jitter every box by N(0, 0.01), shuffle; return the target's index."""
    everything = elements + _chrome(rng)
    jittered = []
    for element in everything:
        box = np.clip(np.asarray(element.box) + rng.normal(0.0, 0.01, size=4), 0.0, 1.0)
        jittered.append(replace(element, box=tuple(float(v) for v in box)))
    order = rng.permutation(len(everything))
    screen = tuple(jittered[i] for i in order)
    index = None if target is None else int(np.flatnonzero(order == everything.index(target))[0])
    return screen, index


def _home(rng: np.random.Generator) -> list[Element]:
    apps = rng.permutation(len(APPS))
    return [
        Element(
            APPS[a],
            "icon",
            (
                0.05 + 0.23 * (k % 4),
                0.2 + 0.2 * (k // 4),
                0.25 + 0.23 * (k % 4),
                0.35 + 0.2 * (k // 4),
            ),
            icon=APPS[a],
            clickable=True,
        )
        for k, a in enumerate(apps)
    ]


def _click(rng, elements, target, kind: str = "click") -> Step:
    screen, index = _screen(rng, elements, target)
    return Step(screen, Action(kind, target=index))


def _plain(rng, elements, action: Action) -> Step:
    screen, _ = _screen(rng, elements)
    return Step(screen, action)


# ------------------------------------------------------------------ the four task families


def _messages(rng: np.random.Generator) -> Episode:
    contact = CONTACTS[rng.integers(len(CONTACTS))]
    message = MESSAGES[rng.integers(len(MESSAGES))]
    goal = f"Send a message saying '{message}' to {contact} using Messages"
    steps = [_plain(rng, _home(rng), Action("open_app", text="Messages"))]
    order = [CONTACTS[i] for i in rng.permutation(len(CONTACTS))]
    page = 0
    while True:  # scroll down until the contact is on the page
        names = order[page * ITEMS_PER_PAGE : (page + 1) * ITEMS_PER_PAGE]
        rows = [Element(n, "list_item", _row_box(r), clickable=True) for r, n in enumerate(names)]
        listing = [
            Element("", "list", (0.0, 0.14, 1.0, 0.8), scrollable=True),
            *rows,
        ]
        if contact in names:
            steps.append(_click(rng, listing, rows[names.index(contact)]))
            break
        steps.append(_plain(rng, listing, Action("scroll_down")))
        page += 1
    history = [MESSAGES[i] for i in rng.choice(len(MESSAGES), size=2, replace=False)]

    def chat(field_text: str, focused: bool) -> tuple[list[Element], Element, Element]:
        field = Element(
            field_text,
            "edit",
            (0.05, 0.88, 0.75, 0.95),
            clickable=True,
            editable=True,
            focused=focused,
        )
        send = Element("", "icon", (0.8, 0.88, 0.95, 0.95), icon="send", clickable=True)
        elements = [
            Element(contact, "text", (0.2, 0.06, 0.6, 0.11)),
            Element("", "icon", (0.02, 0.06, 0.1, 0.11), icon="back", clickable=True),
            Element("", "icon", (0.75, 0.06, 0.85, 0.11), icon="call", clickable=True),
            Element("", "icon", (0.05, 0.8, 0.13, 0.86), icon="attach", clickable=True),
            Element(history[0], "text", (0.1, 0.3, 0.7, 0.36)),
            Element(history[1], "text", (0.3, 0.45, 0.9, 0.51)),
            field,
            send,
        ]
        return elements, field, send

    elements, field, _ = chat("type a message", focused=False)
    steps.append(_click(rng, elements, field))
    elements, _, _ = chat("type a message", focused=True)
    steps.append(_plain(rng, elements, Action("input_text", text=message)))
    elements, _, send = chat(message, focused=True)
    steps.append(_click(rng, elements, send))  # the send icon has no text
    return Episode(goal, tuple(steps), family="messages")


def _settings(rng: np.random.Generator) -> Episode:
    setting = SETTINGS[rng.integers(len(SETTINGS))]
    turn_on = bool(rng.integers(2))
    goal = f"Turn {'on' if turn_on else 'off'} {setting} in Settings"
    state = {s: bool(rng.integers(2)) for s in SETTINGS}
    state[setting] = not turn_on  # the row to click is the one in the opposite state
    steps = [_plain(rng, _home(rng), Action("open_app", text="Settings"))]
    order = [SETTINGS[i] for i in rng.permutation(len(SETTINGS))]

    def page_elements(page: int) -> tuple[list[Element], list[str], list[Element]]:
        names = order[page * ITEMS_PER_PAGE : (page + 1) * ITEMS_PER_PAGE]
        rows, elements = (
            [],
            [
                Element("", "list", (0.0, 0.14, 1.0, 0.8), scrollable=True),
            ],
        )
        for r, name in enumerate(names):
            row = Element(name, "list_item", _row_box(r), clickable=True, checked=state[name])
            box = _row_box(r)
            switch = Element(
                "", "switch", (0.82, box[1] + 0.03, 0.95, box[3] - 0.03), checked=state[name]
            )  # non-clickable distractor
            rows.append(row)
            elements += [row, switch]
        return elements, names, rows

    page = 0
    while True:
        elements, names, rows = page_elements(page)
        if setting in names:
            steps.append(_click(rng, elements, rows[names.index(setting)]))
            break
        steps.append(_plain(rng, elements, Action("scroll_down")))
        page += 1
    state[setting] = turn_on
    elements, _, _ = page_elements(page)
    steps.append(_plain(rng, elements, Action("navigate_home")))
    return Episode(goal, tuple(steps), family="settings")


def _shop(rng: np.random.Generator) -> Episode:
    item = SHOP_ITEMS[rng.integers(len(SHOP_ITEMS))]
    goal = f"Search for {item} in Shop and add the first result to the cart"
    steps = [_plain(rng, _home(rng), Action("open_app", text="Shop"))]
    search = Element("", "icon", (0.7, 0.05, 0.8, 0.1), icon="search", clickable=True)
    featured = [SHOP_ITEMS[i] for i in rng.choice(len(SHOP_ITEMS), size=3, replace=False)]
    shop_home = [
        search,
        Element("", "icon", (0.8, 0.05, 0.88, 0.1), icon="cart", clickable=True),
        *[Element(f, "list_item", _row_box(r), clickable=True) for r, f in enumerate(featured)],
    ]
    steps.append(_click(rng, shop_home, search))  # the search icon has no text
    field = Element(
        "search products",
        "edit",
        (0.05, 0.15, 0.9, 0.22),
        clickable=True,
        editable=True,
        focused=True,
    )
    back = Element("", "icon", (0.02, 0.06, 0.1, 0.11), icon="back", clickable=True)
    steps.append(_plain(rng, [field, back], Action("input_text", text=item)))
    loading = [Element("loading...", "text", (0.3, 0.45, 0.7, 0.5)), back]
    steps.append(_plain(rng, loading, Action("wait")))
    results, adds = [field, back], []
    for r, variant in enumerate(str(v) for v in rng.permutation(VARIANTS)):
        box = _row_box(r, x1=0.65)
        results.append(Element(f"{item} {variant}", "list_item", box, clickable=True))
        adds.append(Element("add", "button", (0.7, box[1], 0.95, box[3]), clickable=True))
    steps.append(_click(rng, results + adds, adds[0]))  # "Add" of the top row
    return Episode(goal, tuple(steps), family="shop")


def _notes(rng: np.random.Generator) -> Episode:
    picks = rng.choice(len(NOTE_TITLES), size=5, replace=False)
    title, others = NOTE_TITLES[picks[0]], [NOTE_TITLES[i] for i in picks[1:]]
    goal = f"Delete the note called {title} in Notes"
    steps = [_plain(rng, _home(rng), Action("open_app", text="Notes"))]

    def listing(titles: list[str]) -> tuple[list[Element], list[Element]]:
        rows = [Element(t, "list_item", _row_box(r), clickable=True) for r, t in enumerate(titles)]
        head = [
            Element("new note", "button", (0.6, 0.8, 0.95, 0.86), clickable=True),
        ]
        return head + rows, rows

    titles = [str(t) for t in rng.permutation([title, *others[:3]])]
    elements, rows = listing(titles)
    steps.append(_click(rng, elements, rows[titles.index(title)], kind="long_press"))
    menu = [
        Element(w, "button", (0.3, 0.3 + 0.08 * k, 0.7, 0.36 + 0.08 * k), clickable=True)
        for k, w in enumerate(("delete", "share", "rename", "pin"))
    ]
    steps.append(_click(rng, menu, menu[0]))
    ok = Element("ok", "button", (0.55, 0.55, 0.75, 0.61), clickable=True)
    dialog = [
        Element("delete this note?", "text", (0.2, 0.45, 0.8, 0.5)),
        ok,
        Element("cancel", "button", (0.25, 0.55, 0.45, 0.61), clickable=True),
    ]
    steps.append(_click(rng, dialog, ok))
    remaining = [t for t in titles if t != title] + [others[3]]
    elements, _ = listing(remaining)  # looks like the list of step 2: history tells them apart
    steps.append(_plain(rng, elements, Action("navigate_back")))
    return Episode(goal, tuple(steps), family="notes")


GENERATORS = {"messages": _messages, "settings": _settings, "shop": _shop, "notes": _notes}


def make_episodes(n: int, seed: int) -> list[Episode]:
    """``n`` expert episodes, families uniform, all randomness from ``seed``."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 20]))
    return [GENERATORS[FAMILIES[rng.integers(len(FAMILIES))]](rng) for _ in range(n)]
