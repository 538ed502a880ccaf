#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Drift check: every command and option the built CLI lists in its --help must appear in
the man page and in both shell completions, so a new option cannot ship undocumented.

usage: drift.py AISB MAN_PAGE BASH_COMPLETION ZSH_COMPLETION

Reads "aisb --help" for the commands, then each command's "--help" for its long options
(and "aisb gate --help"'s usage line for the gate's verbs). Exits 1 naming each miss.
"""
import re
import subprocess
import sys

OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def help_text(aisb, *args):
    done = subprocess.run([aisb, *args, "--help"], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        sys.exit(f"drift: '{' '.join(['aisb', *args, '--help'])}' exited {done.returncode}: "
                 f"{done.stderr.strip()}")
    return done.stdout


def commands_of(top_help):
    """The names under "Commands:" in aisb --help, up to the first blank line."""
    names, inside = [], False
    for line in top_help.splitlines():
        if line.strip() == "Commands:":
            inside = True
        elif inside and not line.strip():
            break
        elif inside:
            names.append(line.split()[0])
    return names


def man_text(path):
    """The roff source as plain text: escapes for dashes and fonts removed."""
    text = open(path, encoding="utf-8").read()
    text = text.replace("\\-", "-").replace("\\ ", " ").replace("\\&", "").replace("\\c", "")
    return re.sub(r"\\f[BIRP]", "", text)


def has_option(text, option):
    return re.search(r"(?<![\w-])" + re.escape(option) + r"(?![\w-])", text) is not None


def has_word(text, word):
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text) is not None


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    aisb, man_path, bash_path, zsh_path = sys.argv[1:]
    documents = {
        "man page " + man_path: man_text(man_path),
        "bash completion " + bash_path: open(bash_path, encoding="utf-8").read(),
        "zsh completion " + zsh_path: open(zsh_path, encoding="utf-8").read(),
    }

    top = help_text(aisb)
    commands = commands_of(top)
    if not commands:
        sys.exit("drift: found no commands in 'aisb --help'")

    # (what, how to look for it, where it came from)
    wanted = [(option, has_option, "aisb --help") for option in OPTION.findall(top)]
    for command in commands:
        wanted.append((command, has_word, "aisb --help"))
        text = help_text(aisb, command)
        wanted += [(option, has_option, f"aisb {command} --help") for option in OPTION.findall(text)]
        usage = re.search(rf"^Usage: aisb {re.escape(command)} ([a-z]+(?:\|[a-z]+)+)", text, re.M)
        if usage:  # verbs, as in "aisb gate up|status|logs|down"
            wanted += [(verb, has_word, f"aisb {command} --help") for verb in usage.group(1).split("|")]

    seen, missing = set(), []
    for item, found, source in wanted:
        if item in seen:
            continue
        seen.add(item)
        for name, text in documents.items():
            # The man page names commands as "aisb COMMAND", not a bare word.
            if name.startswith("man") and source == "aisb --help" and found is has_word:
                ok = re.search(r"aisb\s+" + re.escape(item) + r"(?![\w-])", text) is not None
            else:
                ok = found(text, item)
            if not ok:
                missing.append(f"{item} (from '{source}') is missing from the {name}")

    for line in missing:
        print("drift: " + line, file=sys.stderr)
    if missing:
        return 1
    print(f"drift: {len(seen)} commands, verbs and options, all in the man page and both completions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
