# bash completion for `gecko`, the Gecko command-line tool.
#
# Completes the commands, each command's options (read from `gecko COMMAND
# --help`, so they never drift), topic and service names from the key's core
# (`gecko list --names` / `--service-names`, with the --key/--core given on the
# line so far), type names for --type and `gecko type`, files for --file.
#
# Installed as share/bash-completion/completions/gecko. From a build tree:
#   source tools/gecko/completion/gecko.bash && export PATH="$PWD/build/bin:$PATH"
# (the name `gecko` is what gets completed; the program run for names is the
# one typed, so `build/bin/gecko` works too once completed for it:
#   complete -F _gecko build/bin/gecko).

_gecko_commands="list info echo hz bw pub call type nodes top doctor record play bag bridge keygen help"
_gecko_connection_with_value="--key -k --core --multicast --interface --name --timeout"

# The options of one command, one a line: "--count N" (takes a value) or "--json".
_gecko_options() {
    "$1" "$2" --help 2>/dev/null | sed -nE 's/^  (-k, )?(--[a-z][a-z-]*)( [A-Z][^ ]*)?  .*/\2\3/p'
}

# Topic names (and service names if $3 is "services" or "both") of the key.
_gecko_names() {
    local gecko=$1; shift
    local what=$1; shift
    local flags=()
    case $what in
        topics) flags=(--names) ;;
        services) flags=(--service-names) ;;
        both) flags=(--names --service-names) ;;
    esac
    "$gecko" list "$@" "${flags[@]}" --timeout 1 2>/dev/null
}

_gecko() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local gecko=${COMP_WORDS[0]}
    local cmd="" i=1 w conn=() positionals=0 valued=""
    COMPREPLY=()

    # Connection options before the command, then the command.
    while ((i < COMP_CWORD)); do
        w=${COMP_WORDS[i]}
        if [[ " $_gecko_connection_with_value " == *" $w "* ]]; then
            conn+=("$w" "${COMP_WORDS[i+1]}")
            ((i += 2))
        elif [[ $w == -* ]]; then
            [[ $w == --no-multicast || $w == --*=* ]] && conn+=("$w")
            ((i++))
        else
            cmd=$w
            ((i++))
            break
        fi
    done

    if [[ -z $cmd ]]; then
        if [[ " $_gecko_connection_with_value " == *" $prev "* ]]; then
            return 0  # a value: nothing to offer
        elif [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--help -k $_gecko_connection_with_value --no-multicast" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$_gecko_commands" -- "$cur"))
        fi
        return 0
    fi
    if [[ $cmd == help ]]; then
        ((COMP_CWORD == i)) && COMPREPLY=($(compgen -W "$_gecko_commands" -- "$cur"))
        return 0
    fi

    # The command's options; those that take a value; positionals so far.
    local options
    options=$(_gecko_options "$gecko" "$cmd")
    valued=" -k $(printf '%s\n' "$options" | awk 'NF > 1 {printf "%s ", $1}')"
    while ((i < COMP_CWORD)); do
        w=${COMP_WORDS[i]}
        if [[ $valued == *" $w "* ]]; then
            [[ " $_gecko_connection_with_value " == *" $w "* ]] && conn+=("$w" "${COMP_WORDS[i+1]}")
            ((i += 2))
            continue
        fi
        if [[ $w == --no-multicast || ($w == --*=* && " $_gecko_connection_with_value " == *" ${w%%=*} "*) ]]; then
            conn+=("$w")
        elif [[ $w != -* || $w == - ]]; then
            ((positionals++))
        fi
        ((i++))
    done

    case $prev in
        --file)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$cur"))
            return 0
            ;;
        --type)
            COMPREPLY=($(compgen -W "$("$gecko" type --list 2>/dev/null)" -- "$cur"))
            return 0
            ;;
    esac
    [[ $valued == *" $prev "* ]] && return 0  # another option's value: nothing to offer

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "--help $(printf '%s\n' "$options" | awk '{print $1}') $([[ $valued == *" --key "* ]] && echo -k)" -- "$cur"))
        return 0
    fi
    ((positionals > 0)) && return 0  # names come first; the rest (JSON) is the user's
    case $cmd in
        echo | hz | bw | pub) COMPREPLY=($(compgen -W "$(_gecko_names "$gecko" topics "${conn[@]}")" -- "$cur")) ;;
        info) COMPREPLY=($(compgen -W "$(_gecko_names "$gecko" both "${conn[@]}")" -- "$cur")) ;;
        call) COMPREPLY=($(compgen -W "$(_gecko_names "$gecko" services "${conn[@]}")" -- "$cur")) ;;
        type) COMPREPLY=($(compgen -W "$("$gecko" type --list 2>/dev/null) $(_gecko_names "$gecko" topics "${conn[@]}")" -- "$cur")) ;;
    esac
    return 0
}

complete -F _gecko gecko
