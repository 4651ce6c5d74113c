"""``_entries.merge_keyed_into`` as first written: every entry read back and merged, no fast
path. The oracle its fast paths are held to (tests/compressors/test_keyed_repeats.py,
test_digest_reading_fast_paths.py)."""

from __future__ import annotations

from compactkit.compressors import _entries
from compactkit.compressors._refs import merge_spans, split_refs, with_refs


def merge_keyed_reference(entries: dict[str, str], new: list[str]) -> None:
    """Merge ``new`` into ``entries`` one entry at a time, each read back in full."""
    for entry in new:
        key = _entries.entry_key(entry)
        old = entries.get(key)
        if old is None:
            entries[key] = entry
            continue
        old_text, old_refs = split_refs(old)
        new_text, new_refs = split_refs(entry)
        head, details = _entries.split_details(old_text)
        _, more = _entries.split_details(new_text)
        details, changed = _entries.add_details(details, more)
        refs = merge_spans(old_refs, new_refs) if new_refs else old_refs
        if changed:
            del entries[key]
            entries[key] = with_refs(_entries.join_details(head, details), refs)
        elif refs != old_refs:
            entries[key] = with_refs(old_text, refs)
