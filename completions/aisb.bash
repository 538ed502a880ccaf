# SPDX-License-Identifier: MIT
# bash completion for aisb(1). Installed as bash-completion/completions/aisb and loaded on
# demand. Every option of "aisb run --help" must appear here: tests/install/drift.py checks.
# COMPREPLY=($(compgen ...)) is bash-completion's own idiom: the words never hold spaces.
# shellcheck disable=SC2207

_aisb_run_options='--base-image --install --ca-cert --net --allow --no-gate --proxy
  --gate-add-host --secret --gate-idle-stop --ask --ask-timeout --network-backend --env --env-file --mount --protect --review --undo --device --no-cwd --memory --cpus --pids-limit --tmp-size
  --read-only --ephemeral-home --home-volume --shell --harness --node-source --thinking
  --no-pi-config --no-harness-config --no-harness-keys --bridge-carry --no-agents --agents-dir --allow-unenforced --insecure-keep-root --unsafe-create-patch
  --insecure-allow-host-ranges --strict-args --dry-run --print-policy --print-containerfile --print-ruleset
  --print-entrypoint --config --socket --quiet --verbose --unfiltered-output --help'

# The options "aisb build" accepts: those that decide the image, and the output flags.
_aisb_build_options='--base-image --install --ca-cert --harness --node-source --strict-args
  --dry-run --print-policy --print-containerfile --config --socket --quiet --verbose --help'

# Complete the value of option $1 into COMPREPLY; fails when $1 takes no value we know.
_aisb_value()
{
    local option=$1 cur=$2
    case $option in
        --net) COMPREPLY=($(compgen -W 'allow none full' -- "$cur")) ;;
        --network-backend) COMPREPLY=($(compgen -W 'auto pasta slirp4netns' -- "$cur")) ;;
        --harness) COMPREPLY=($(compgen -W 'pi codex claude' -- "$cur")) ;;
        --node-source) COMPREPLY=($(compgen -W 'official npm' -- "$cur")) ;;
        --thinking) COMPREPLY=($(compgen -W 'off none minimal low medium high xhigh max host' -- "$cur")) ;;
        --read-only) COMPREPLY=($(compgen -W 'true false' -- "$cur")) ;;
        --undo) COMPREPLY=($(compgen -W 'auto on off' -- "$cur")) ;;
        --ask) COMPREPLY=($(compgen -W 'auto tty deny' -- "$cur")) ;;
        --shell) COMPREPLY=($(compgen -W 'bash zsh' -- "$cur")) ;;
        --env-file | --ca-cert | --config | --unsafe-create-patch) _filedir ;;
        --device) _filedir ;;
        --agents-dir) _filedir -d ;;
        --socket) _filedir ;;
        --env) COMPREPLY=($(compgen -e -- "$cur")) ;;
        --mount) _filedir ;;
        --base-image | --install | --allow | --proxy | --gate-add-host | --secret | --gate-idle-stop | --ask-timeout | \
            --memory | --cpus | \
            --pids-limit | --tmp-size | --home-volume | -n)
            ;; # free-form: nothing sensible to offer
        *) return 1 ;;
    esac
    return 0
}

_aisb()
{
    local cur prev words cword split
    _init_completion -s -n := || return

    local commands='run build gate doctor skill-lint ps clean inspect kube diff apply discard undo ask allow log alias'
    local command='' verb='' i
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            -*) ;;
            *)
                if [[ -z $command ]]; then
                    command=${words[i]}
                elif [[ $command == gate && -z $verb ]]; then
                    verb=${words[i]}
                fi
                ;;
        esac
    done

    if [[ -z $command ]]; then
        COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
        return
    fi

    # After "--" on a run line, the command and its arguments: complete as a command line.
    if [[ $command == run ]]; then
        for ((i = 1; i < cword; i++)); do
            if [[ ${words[i]} == -- ]]; then
                _command_offset $((i + 1))
                return
            fi
        done
    fi

    # An option's value, as the next word or after "=" (_init_completion -s splits those).
    # --read-only takes its value only after "="; run's --shell takes none (alias's does).
    if [[ $prev == -* ]] &&
        ! [[ $prev == --read-only && $split != true ]] &&
        ! [[ $prev == --shell && $command != alias ]] &&
        _aisb_value "$prev" "$cur"; then
        return
    fi

    local options
    case $command in
        run) options="$_aisb_run_options" ;;
        build) options="$_aisb_build_options" ;;
        gate)
            if [[ -z $verb ]]; then
                COMPREPLY=($(compgen -W 'up status logs down --help' -- "$cur"))
                return
            fi
            options="--json -n $_aisb_run_options"
            ;;
        doctor) options='--deep --json --help' ;;
        skill-lint)
            if [[ $cur != -* ]]; then
                _filedir -d
                return
            fi
            options='--json --no-history --agents-dir --no-agents --config --socket --help'
            ;;
        ps) options='--json --help' ;;
        clean) options='--all --volumes --volumes= --layers --dry-run --help' ;;
        diff) options='--summary --json --help' ;;
        apply)
            if [[ $cur != -* ]]; then
                _filedir
                return
            fi
            options='--force --dry-run --json --help'
            ;;
        discard) options='--help' ;;
        undo) options='--force --dry-run --json --help' ;;
        inspect) options="--json $_aisb_run_options" ;;
        kube) options="--as --target --part --netfilter --image-repo --push --insecure-registry --timeout $_aisb_run_options" ;;
        allow) options='--write --help' ;;
        log) options='-n --json --egress --help' ;;
        ask) options='--json --help' ;;
        alias) options='--shell --install --help' ;;
        *) return ;;
    esac
    if [[ $cur == -* || $command != run ]]; then
        COMPREPLY=($(compgen -W "$options" -- "$cur"))
        [[ ${COMPREPLY-} == *= ]] && compopt -o nospace
    fi
} &&
    complete -F _aisb aisb
