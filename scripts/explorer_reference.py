"""The explorers' reference: what each one shows over its test states, to compare a refactor with.

Issue 22 changes how every explorer is built and laid out "without changing
what any user sees". For every explorer in both styles this script steps
through a fixed list of states (the frame tests' changes, the widget
benchmark's scripted session, the board toggle, the walkthrough's buttons and
the states the issue's "Explorers never inconsistent" section names) and
records per state the readout HTML, the table HTML and the PNG's size in
pixels in ``tests/reference/explorers.json``; ``tests/test_widgets_reference.py``
replays the same steps and fails on any changed text or size. It also writes
a contact sheet per explorer (each state's frame at half size, the default
style left, the board style right) into ``tests/reference/sheets/``, for the
eye: sub-pixel moves are expected from a layout change, a changed picture is not.

Usage::

    python scripts/explorer_reference.py --sheets DIR  # contact sheets of the current code
    python scripts/explorer_reference.py --write       # rewrite the reference (a deliberate change)
    python scripts/explorer_reference.py --write --new-steps  # steps from the tests and benchmark

Without ``--new-steps`` the steps come from the stored reference, so the
states stay the ones the reference was made from.
"""

from __future__ import annotations

import argparse
import io
import json
import runpy
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from PIL import Image

from attention_lib.widgets import available_explorers

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "reference" / "explorers.json"
SHEETS = ROOT / "tests" / "reference" / "sheets"
STYLES = ("default", "board")
#: Extra steps per explorer, after the frame tests' and the benchmark's: the states that
#: issue 22 names (done one change at a time, as they must look when batched) and buttons.
EXTRA_STEPS = {
    "mask_editor": [
        {"set": {"causal": False}},
        {"set": {"length": 8}},
        {"set": {"causal": True}},
        {"click": [2, 6]},  # a cell the causal mask blocks: the readout says why
        {"click": [5, 1]},
        {"set": {"length": 5, "causal": True, "lengths": [None, 3], "blocked": []}},
    ],
    "teach_walkthrough": [
        {"press": "next"},
        {"press": "next"},
        {"press": "back"},
        {"press": "reset"},
    ],
}


def _tuples(value):
    """JSON lists back to the tuples the controls hold."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def _lists(value):
    if isinstance(value, tuple | list):
        return [_lists(v) for v in value]
    return value


def new_steps(name, explorer):
    """The steps for explorer ``name``: frame tests, benchmark session, extras, board toggle."""
    sys.path.insert(0, str(ROOT / "tests"))
    frames = runpy.run_path(str(ROOT / "tests" / "test_widgets_template.py"))["FRAME_CHANGES"]
    bench = runpy.run_path(str(ROOT / "benchmarks" / "bench_widgets.py"))
    session = list(bench["SCRIPTED_CHANGES"].get(name, ())) or bench["default_changes"](explorer)
    steps = [{"set": _lists(change), "sheet": True} for change in frames.get(name, ())]
    steps += [{"set": _lists(change)} for change in session]
    steps += [{**step, "sheet": True} for step in EXTRA_STEPS.get(name, ())]
    # The toggle to the other style and back: the last two frames of each column.
    steps += [{"board_toggle": "other", "sheet": True}, {"board_toggle": "back", "sheet": True}]
    return steps


def apply(explorer, step, style):
    """Do ``step`` to ``explorer`` (built in ``style``) as a user or a notebook would."""
    if "set" in step:
        explorer.set(**{key: _tuples(value) for key, value in step["set"].items()})
    elif "click" in step:
        button = explorer.controls["blocked"].buttons[tuple(step["click"])]
        button.value = not button.value
    elif "press" in step and step["press"] in explorer.buttons:
        explorer.press(step["press"])
    elif "press" in step:  # the walkthrough before issue 22: Next, Back, Reset as methods
        getattr(explorer, step["press"])()
    elif "board_toggle" in step:
        explorer.board_toggle.value = (step["board_toggle"] == "other") == (style == "default")
    else:
        raise ValueError(f"unknown step {step!r}")


def shown(explorer):
    """What the page shows of ``explorer``: readout and table HTML, the PNG's size in pixels."""
    size = Image.open(io.BytesIO(explorer.png)).size
    return {
        "readout": explorer.readout.value,
        "table": explorer.table.value,
        "png_size": list(size),
    }


def replay(spec, style, steps):
    """``(what is shown, frame PNG or None)`` for the first state and after each step."""
    explorer = spec.factory(style=style)
    records = [(shown(explorer), explorer.png)]
    for step in steps:
        apply(explorer, step, style)
        records.append((shown(explorer), explorer.png if step.get("sheet") else None))
    explorer.close()
    return records


def pooled(shown_by_style):
    """The records with each distinct HTML text stored once (``texts``), referred to by index."""
    texts = {}
    records = {
        style: [
            {
                "readout": texts.setdefault(record["readout"], len(texts)),
                "table": texts.setdefault(record["table"], len(texts)),
                "png_size": list(record["png_size"]),
            }
            for record in records
        ]
        for style, records in shown_by_style.items()
    }
    return {"texts": list(texts), **records}


def unpooled(entry, style):
    """The records of ``style`` in an entry of the reference, with their texts."""
    texts = entry["texts"]
    return [
        {"readout": texts[r["readout"]], "table": texts[r["table"]], "png_size": r["png_size"]}
        for r in entry[style]
    ]


def contact_sheet(columns, scale=0.5, gap=8):
    """One PNG of frames: one column per style, one row per state, each frame at ``scale``."""
    columns = [
        [Image.open(io.BytesIO(png)).convert("RGB") for png in frames if png is not None]
        for frames in columns
    ]
    columns = [
        [im.resize((round(im.width * scale), round(im.height * scale)), Image.LANCZOS) for im in c]
        for c in columns
    ]
    widths = [max(im.width for im in column) for column in columns]
    heights = [max(ims) for ims in zip(*([im.height for im in c] for c in columns), strict=True)]
    sheet = Image.new(
        "RGB",
        (sum(widths) + gap * (len(widths) + 1), sum(heights) + gap * (len(heights) + 1)),
        "#808080",
    )
    x = gap
    for column, width in zip(columns, widths, strict=True):
        y = gap
        for im, height in zip(column, heights, strict=True):
            sheet.paste(im, (x, y))
            y += height + gap
        x += width + gap
    # a palette keeps the committed sheets small; frames are flat colours and grey text
    return sheet.quantize(colors=128, method=Image.Quantize.MEDIANCUT)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {REFERENCE.name}")
    parser.add_argument("--new-steps", action="store_true", help="steps from tests and benchmark")
    parser.add_argument("--sheets", type=Path, help=f"contact sheets into this folder ({SHEETS})")
    parser.add_argument("--only", action="append", help="explorer name (repeatable)")
    args = parser.parse_args(argv)
    stored = json.loads(REFERENCE.read_text()) if REFERENCE.exists() else {}
    specs = available_explorers()
    names = args.only or sorted(specs)
    reference = dict(stored)
    for name in names:
        spec = specs[name]
        if args.new_steps or name not in stored:
            steps = new_steps(name, spec.factory())
        else:
            steps = stored[name]["steps"]
        columns, shown_by_style = [], {}
        for style in STYLES:
            records = replay(spec, style, steps)
            shown_by_style[style] = [text for text, _ in records]
            columns.append([png for _, png in records])
        reference[name] = {"steps": steps, **pooled(shown_by_style)}
        if args.sheets:
            args.sheets.mkdir(parents=True, exist_ok=True)
            contact_sheet(columns).save(args.sheets / f"{name}.png", optimize=True)
        print(f"{name}: {len(steps)} steps")
    if args.write:
        REFERENCE.parent.mkdir(parents=True, exist_ok=True)
        REFERENCE.write_text(
            json.dumps(dict(sorted(reference.items())), indent=1, ensure_ascii=False) + "\n"
        )


if __name__ == "__main__":
    main()
