#!/usr/bin/env bash
# How eval/groundtruth/corpus was taken: the listed files of six public repositories (all MIT or
# MIT/Unlicense), at the commits in corpus/SOURCES.tsv, from local mirrors (MIRRORS, one bare
# repository per "owner+name/repo"). The evaluation never runs this; it reads the committed snapshot.
set -euo pipefail
MIRRORS=${MIRRORS:-/work/.mirror}
here=$(cd "$(dirname "$0")" && pwd)
out="$here/corpus"
rm -rf "$out"
mkdir -p "$out"
printf 'name\tupstream\tcommit\n' >"$out/SOURCES.tsv"
take() {
  local name=$1 mirror=$2 pattern=$3
  local git="$MIRRORS/$mirror/repo"
  local commit
  commit=$(git -C "$git" rev-parse HEAD)
  printf '%s\thttps://github.com/%s\t%s\n' "$name" "${mirror/+//}" "$commit" >>"$out/SOURCES.tsv"
  git -C "$git" ls-tree -r --name-only "$commit" | grep -E "$pattern" | while read -r file; do
    mkdir -p "$out/$name/$(dirname "$file")"
    git -C "$git" show "$commit:$file" >"$out/$name/$file"
  done
}
take fastify fastify+fastify '^(docs/.*\.md|README\.md|package\.json|LICENSE)$'
take vite vitejs+vite '^(docs/(config|guide)/.*\.md|packages/vite/package\.json|packages/vite/LICENSE\.md|LICENSE)$'
take axios axios+axios '^(README\.md|CHANGELOG\.md|package\.json|index\.d\.ts|lib/defaults/index\.js|MIGRATION_GUIDE\.md|LICENSE)$'
take prettier prettier+prettier '^(docs/.*\.md|package\.json|\.github/workflows/.*\.yml|LICENSE)$'
take express expressjs+express '^(History\.md|Readme\.md|package\.json|lib/.*\.js|LICENSE)$'
take ripgrep BurntSushi+ripgrep '^(GUIDE\.md|FAQ\.md|CHANGELOG\.md|Cargo\.toml|crates/[a-z]+/Cargo\.toml|README\.md|\.github/workflows/.*\.yml|LICENSE-MIT|UNLICENSE)$'
