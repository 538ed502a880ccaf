#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Drift check: every command and option the built CLI lists in its --help must appear in
the man page and in both shell completions, so a new option cannot ship undocumented; and
libaisb's table of policy keys (printed by the policy-keys program, through the public API)
is the source of the policy's options: aisb run --help shows each key's placeholder, help,
"(repeatable)" and "(default X)" exactly as the table has them, aisb build takes exactly the
keys that decide the image, the man page states each default and lists the config keys and
the repeatable ones, the zsh completion marks the repeatable ones, and docs/config.md has a
row for every key with its default.

usage: drift.py AISB POLICY_KEYS MAN_PAGE BASH_COMPLETION ZSH_COMPLETION CONFIG_DOC

Reads "aisb --help" for the commands, then each command's "--help" for its long options
(and "aisb gate --help"'s usage line for the gate's verbs). Exits 1 naming each miss.
"""
import re
import shlex
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


class Key:
    """One row of libaisb's key table."""

    def __init__(self, line):
        name, self.placeholder, flags, default, self.help = line.split("\t")
        self.name = name
        self.flags = set() if flags == "-" else set(flags.split(","))
        self.default = default or None

    @property
    def option(self):
        return "config-only" not in self.flags

    def help_line(self):
        """The line aisb run --help must print for this key, spaces squeezed."""
        if "boolean" in self.flags:
            left = f"--{self.name}" + ("[=BOOL]" if self.default == "true" else "")
        else:
            left = f"--{self.name} {self.placeholder}"
        text = f"{left} {self.help}"
        if "repeatable" in self.flags:
            text += " (repeatable)"
        if self.default:
            text += f" (default {self.default})"
        return squeeze(text)


def squeeze(text):
    return " ".join(text.split())


def policy_keys(program):
    done = subprocess.run([program], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        sys.exit(f"drift: {program} exited {done.returncode}: {done.stderr.strip()}")
    keys = [Key(line) for line in done.stdout.splitlines()]
    if not keys:
        sys.exit(f"drift: {program} printed no keys")
    return keys


def roff_flat(lines):
    """Roff source lines as the text they set: font macros unwrapped (alternating ones join
    their arguments without spaces), escapes removed, all on one line."""
    words = []
    for line in lines:
        line = line.replace("\\-", "-").replace("\\ ", " ").replace("\\&", "").replace("\\c", "")
        line = re.sub(r"\\f[BIRP]", "", line)
        if line.startswith("."):
            macro, _, rest = line[1:].partition(" ")
            try:
                parts = shlex.split(rest)
            except ValueError:
                parts = rest.split()
            if macro in ("B", "I"):
                words.append(" ".join(parts))
            elif macro in ("BR", "RB", "IR", "RI", "BI", "IB"):
                words.append("".join(parts))
            continue
        words.append(line)
    return squeeze(" ".join(words))


def man_paragraphs(path):
    """The man page's tagged paragraphs: {first word of the tag: the paragraph's text}."""
    lines = open(path, encoding="utf-8").read().splitlines()
    paragraphs = {}
    for i, line in enumerate(lines):
        if line != ".TP" or i + 1 >= len(lines):
            continue
        tag = roff_flat([lines[i + 1]])
        body = []
        for following in lines[i + 2:]:
            if following.split(" ")[0] in (".TP", ".SS", ".SH", ".PP"):
                break
            body.append(following)
        word = tag.split(" ")[0].split(",")[0].split("[")[0]
        paragraphs.setdefault(word, roff_flat(body))
    return paragraphs


def man_list_after(flat, opening, closing):
    """The bold words of the man page's list that starts after opening, up to closing."""
    start = flat.find(opening)
    if start < 0:
        return None
    end = flat.find(closing, start + len(opening))
    return set(re.findall(r"[a-z][a-z0-9-]*", flat[start + len(opening):end]))


def table_drift(aisb, keys, man_path, bash_path, zsh_path, config_path):
    missing = []
    options = [k for k in keys if k.option]

    # --help: each key's line exactly as the table makes it; no key offered that is not one.
    for command, wanted in (("run", options), ("build", [k for k in options if "image" in k.flags])):
        text = help_text(aisb, command)
        lines = {squeeze(line).split(" ")[0].split("[")[0]: squeeze(line)
                 for line in text.splitlines() if line.strip().startswith("--")}
        for k in wanted:
            line = lines.get("--" + k.name)
            if line is None:
                missing.append(f"--{k.name} (a key of the table) is missing from 'aisb {command} --help'")
            elif line != k.help_line():
                missing.append(f"'aisb {command} --help' says '{line}' for --{k.name}, "
                               f"the table makes '{k.help_line()}'")
        offered = {k.name for k in wanted}
        for k in keys:
            if "--" + k.name in lines and k.name not in offered:
                missing.append(f"'aisb {command} --help' offers --{k.name}, which the table does not make "
                               f"an option of it")

    # The man page: each default in its option's paragraph; the config keys, the repeatable
    # ones, and the keys with no option, as the table has them.
    paragraphs = man_paragraphs(man_path)
    flat = roff_flat(open(man_path, encoding="utf-8").read().splitlines())
    for k in keys:
        tag = "--" + k.name if k.option else k.name
        body = paragraphs.get(tag)
        if body is None:
            missing.append(f"{tag} has no paragraph of its own in the man page {man_path}")
        elif k.default and k.option and f"(default {k.default})" not in body:
            missing.append(f"the man page's paragraph on {tag} does not say '(default {k.default})'")
    listed = man_list_after(flat, "is a key, named without its dashes, with the same values:",
                            "Repeatable keys")
    if listed is None:
        missing.append("the man page's CONFIGURATION lists no keys")
    elif listed != {k.name for k in options}:
        missing.append(f"the man page's CONFIGURATION lists {sorted(listed ^ {k.name for k in options})} "
                       f"differently from the table")
    repeatable = man_list_after(flat, "Repeatable keys (", ")")
    if repeatable != {k.name for k in keys if "repeatable" in k.flags}:
        missing.append(f"the man page's repeatable keys {sorted(repeatable or [])} are not the table's "
                       f"{sorted(k.name for k in keys if 'repeatable' in k.flags)}")

    # The completions: the image keys where build's options are; zsh marks repeatable keys.
    bash = open(bash_path, encoding="utf-8").read()
    zsh = open(zsh_path, encoding="utf-8").read()
    build_words = re.search(r"_aisb_build_options='([^']*)'", bash)
    build_words = set(build_words.group(1).split()) if build_words else set()
    zsh_image = re.search(r"_aisb_image_options=\((.*?)\n  \)", zsh, re.S)
    zsh_image = zsh_image.group(1) if zsh_image else ""
    for k in options:
        image = "image" in k.flags
        if image != ("--" + k.name in build_words):
            missing.append(f"--{k.name} is {'missing from' if image else 'wrongly in'} the bash "
                           f"completion's build options")
        if image != bool(re.search(r"'\*?--" + re.escape(k.name) + r"[=\[]", zsh_image)):
            missing.append(f"--{k.name} is {'missing from' if image else 'wrongly in'} the zsh "
                           f"completion's image options")
        starred = re.search(r"'\*--" + re.escape(k.name) + r"[=\[]", zsh) is not None
        if starred != ("repeatable" in k.flags):
            missing.append(f"the zsh completion {'marks' if starred else 'does not mark'} --{k.name} "
                           f"repeatable (*), the table {'does not' if starred else 'does'}")

    # docs/config.md: a row per key, with its default, saying whether it repeats.
    rows = {}
    for line in open(config_path, encoding="utf-8"):
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        match = re.fullmatch(r"`([a-z][a-z0-9-]*)`", cells[0]) if len(cells) == 3 else None
        if match:
            rows[match.group(1)] = cells
    for k in keys:
        row = rows.get(k.name)
        if row is None:
            missing.append(f"{k.name} has no row in {config_path}")
            continue
        # An absolute path default is the installation's prefix: the row says "the installed one".
        if k.default and not k.default.startswith("/") and f"`{k.default}`" not in row[2]:
            missing.append(f"the default of {k.name} in {config_path} is not `{k.default}`")
        if ("repeatable" in row[1]) != ("repeatable" in k.flags):
            missing.append(f"{config_path} {'says' if 'repeatable' in row[1] else 'does not say'} "
                           f"{k.name} is repeatable, the table {'does not' if 'repeatable' in row[1] else 'does'}")
    for name in rows:
        if name not in {k.name for k in keys}:
            missing.append(f"{config_path} has a row for {name}, which is no key")
    return missing



def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    aisb, keys_program, man_path, bash_path, zsh_path, config_path = sys.argv[1:]
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

    keys = policy_keys(keys_program)
    missing += table_drift(aisb, keys, man_path, bash_path, zsh_path, config_path)

    for line in missing:
        print("drift: " + line, file=sys.stderr)
    if missing:
        return 1
    print(f"drift: {len(seen)} commands, verbs and options, all in the man page and both completions; "
          f"{len(keys)} policy keys, each as the table says in --help, the man page, the completions "
          f"and {config_path.rsplit('/', 1)[-1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
