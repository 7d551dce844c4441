#!/bin/sh
# The image's entry point: installs the models MT_INSTALL names, then runs the command
# (mt-server). MT_INSTALL is a comma-separated list of what `mt-models install` takes:
# Hugging Face repository ids (Helsinki-NLP/opus-mt-en-fr) and argos-translate packages
# (argos:en-es from the package index, LibreTranslate's --load-only habit, or the https URL
# of a .argosmodel). They go to MT_MODELS_DIR (default /data/models, a
# volume: a model installed once is not fetched again at the next start), and every model
# there is served beside the bundled ones (MT_MODELS, default /models/en-de,/models/de-en).
# The server starts, and /health/ready turns true, only once every install has finished;
# a failed install stops the container with its message.
set -eu

if [ -n "${MT_INSTALL:-}" ]; then
  MT_MODELS_DIR=${MT_MODELS_DIR:-/data/models}
  export MT_MODELS_DIR
  old_ifs=$IFS
  IFS=','
  set -f
  for item in $MT_INSTALL; do
    item=$(printf '%s' "$item" | tr -d ' \t')
    [ -n "$item" ] || continue
    echo "mt-entrypoint: installing $item into $MT_MODELS_DIR" >&2
    if ! mt-models install "$item"; then
      echo "mt-entrypoint: installing $item failed; not starting" >&2
      exit 1
    fi
  done
  set +f
  IFS=$old_ifs
  served=${MT_MODELS:-/models/en-de,/models/de-en}
  for dir in "$MT_MODELS_DIR"/*/; do
    [ -f "${dir}config.json" ] || continue
    served="$served,${dir%/}"
    echo "mt-entrypoint: serving ${dir%/}" >&2
  done
  MT_MODELS=$served
  export MT_MODELS
fi

exec "$@"
