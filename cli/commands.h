/* SPDX-License-Identifier: MIT */
/* One function per subcommand; each gets the arguments after its own name. */
#pragma once

int command_run(int argc, char **argv);
int command_build(int argc, char **argv);
int command_gate(int argc, char **argv);
int command_ps(int argc, char **argv);
int command_clean(int argc, char **argv);
int command_log(int argc, char **argv);
int command_inspect(int argc, char **argv);
int command_doctor(int argc, char **argv);
int command_skill_lint(int argc, char **argv);
int command_alias(int argc, char **argv);
int command_allow(int argc, char **argv);
int command_kube(int argc, char **argv);
int command_diff(int argc, char **argv);
int command_apply(int argc, char **argv);
int command_discard(int argc, char **argv);
int command_undo(int argc, char **argv);
int command_ask(int argc, char **argv);
