#!/usr/bin/env bash
# Carries sentinel's C dependencies, as Debian 12 packages, to a machine that has a compiler,
# CMake and libtorch but no package manager and no network (a lent GPU machine: Ubuntu-like
# image with CUDA, PyTorch from pip, no apt). Two verbs:
#
#   download DIR          here, on Debian 12 amd64 with apt: `apt-get download` into DIR the -dev
#                         packages that compile and link sentinel (headers, .so links, .pc files)
#                         and the runtime closure of their libraries, less what every glibc
#                         system has; checks the bundle is complete (every DT_NEEDED of every
#                         carried ELF is carried or universal) and prints its size.
#   install DIR PREFIX    there: unpacks every .deb of DIR into PREFIX (dpkg-deb -x, or ar + tar,
#                         or python3), points /usr paths into PREFIX (absolute symlinks, .pc
#                         files, Debian's update-alternatives links, e.g. libopenblas.so.0), and
#                         writes PREFIX/env.sh (to source) and PREFIX/cmake.args (-D lines).
#
# Why not the image's own libraries: it lacks pkg-config, cJSON, PCRE2, utf8proc, HDF5,
# libmicrohttpd and OpenBLAS, and has no apt to get them. Debian 12's binaries are built for its
# glibc 2.36, so `install` refuses an older one (GPU_DEPS_GLIBC_OK=1: down to the 2.34 their
# symbols actually ask for). The bundle travels with the work tree (64 MiB cap in all): `download`
# fails over 45 MiB (it is about 26).
#
# env.sh appends PREFIX's library dirs to LD_LIBRARY_PATH (the carried closure is complete, so
# sentinel gets exactly the Debian 12 set it was linked against); in that shell, other programs
# also get the carried copy of any library the image has too (install lists them). cmake.args
# alone (without env.sh) configures and links; running sentinel needs env.sh.
#
# Left out of the closure, and why:
#   universal (every glibc system with gcc has them, as new as Debian 12's or newer):
#     libc6, libgcc-s1, libstdc++6, gcc-12-base (docs only: the version anchor of GCC's runtimes)
#   unused: libsasl2-modules-db, libdb5.3 (SASL's sasldb plugin, dlopen()ed; no carried library
#     links libdb)
# and of the -dev packages' own Depends, which a shared C link does not read: HDF5's C++,
# Fortran and high-level libraries, libjpeg-dev, libssl-dev, libaec-dev and hdf5-helpers (h5cc:
# FindHDF5 is given HDF5_ROOT instead), libgnutls28-dev (static links of libmicrohttpd only; its
# Requires.private is commented out of the .pc), the 16/32-bit and POSIX PCRE2 libraries, and
# the empty meta packages libopenblas-dev and libopenblas0.
# libcurl and zlib: always the carried ones. HDF5 needs libcurl.so.4 at run time anyway, so its
# closure travels regardless; linking against it too gives one combination, the same whatever
# the image has.
#
# usage: scripts/gpu-deps.sh download DIR
#        scripts/gpu-deps.sh install DIR PREFIX
#        scripts/gpu-deps.sh --help
set -euo pipefail

ARCH_TRIPLET=x86_64-linux-gnu
MAX_BUNDLE_MIB=45
GLIBC_FLOOR=2.36                       # Debian 12's glibc; the carried binaries were built for it
MANIFEST=gpu-deps.manifest             # in DIR: packages, versions, alternatives, glibc floor

# -dev packages, taken without their Depends (see the header for what those would add).
DEV_PKGS=(libcjson-dev libpcre2-dev libutf8proc-dev libhdf5-dev libmicrohttpd-dev
          libopenblas-pthread-dev libcurl4-openssl-dev zlib1g-dev pkgconf)
# The libraries those -dev packages link to (and pkg-config's binary): their Depends closure
# is computed with apt-cache, not listed here.
RUNTIME_ROOTS=(libcjson1 libpcre2-8-0 libutf8proc2 libhdf5-103-1 libmicrohttpd12
               libopenblas0-pthread libcurl4 zlib1g pkgconf-bin)
UNIVERSAL_PKGS=(libc6 libgcc-s1 libstdc++6 gcc-12-base)
UNUSED_PKGS=(libsasl2-modules-db libdb5.3)
# Sonames those universal packages provide: a carried ELF may need these and nothing else
# outside the bundle.
UNIVERSAL_SONAMES=(libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2
                   libutil.so.1 libanl.so.1 ld-linux-x86-64.so.2 libgcc_s.so.1 libstdc++.so.6)

usage() {
    cat <<EOF
usage: scripts/gpu-deps.sh download DIR
       scripts/gpu-deps.sh install DIR PREFIX
       scripts/gpu-deps.sh gloo SRC DIR

download DIR        (Debian 12 amd64, with apt) fetch the .deb files sentinel's build needs
                    into DIR (existing *.deb there are replaced), check the bundle is complete,
                    print its size (must stay under ${MAX_BUNDLE_MIB} MiB).
install DIR PREFIX  (the target machine, glibc >= ${GLIBC_FLOOR}, no apt needed) unpack DIR into
                    PREFIX (absolute; created, or replaced if an earlier install made it), fix
                    /usr paths, write PREFIX/env.sh and PREFIX/cmake.args. Then:
                      . PREFIX/env.sh
                      cmake -S . -B build \$(cat PREFIX/cmake.args) [-DCMAKE_PREFIX_PATH=<torch>]

gloo SRC DIR        copy the headers of a pytorch/gloo checkout SRC into DIR/include, with a
                    generated gloo/config.h (a PyTorch wheel lacks them; scripts/gpu-check.sh
                    looks in .gpu/gloo)

GPU_DEPS_GLIBC_OK=1  install on a glibc older than ${GLIBC_FLOOR} but at least what the carried
                    binaries' symbols ask for (recorded by download; 2.34 for Debian 12's).
GPU_DEPS_UNPACK=dpkg|ar|python  force one way of unpacking (default: the first available).

Exit status: 0 done, 1 failure, 2 usage or a machine this bundle cannot serve.
EOF
}

die() { echo "gpu-deps: $*" >&2; exit 1; }
refuse() { echo "gpu-deps: $*" >&2; exit 2; }
log() { echo "gpu-deps: $*"; }
need_cmd() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found; $2"; }
in_list() {  # in_list WORD LIST...: is WORD one of LIST?
    local w=$1 x
    shift
    for x in "$@"; do [ "$x" = "$w" ] && return 0; done
    return 1
}

# ---------------------------------------------------------------------------------------------
# download

# The packages "$1" depends on (Depends and Pre-Depends, no Recommends): the first alternative
# of an a|b group, the first provider of a virtual package.
direct_deps() {
    apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
        --no-replaces --no-enhances "$1" | awk '
        NR == 1 { next }
        /^ [ |](Pre)?Depends: / {
            alt = substr($0, 2, 1) == "|"
            name = $2
            if (!ingroup) {
                if (name ~ /^</) { wantprov = 1 } else { print name; wantprov = 0 }
            } else { wantprov = 0 }
            ingroup = alt
            next
        }
        /^    / { if (wantprov) { print $1; wantprov = 0 } next }
        { wantprov = 0 }'
}

# The runtime closure of the roots: breadth first, not expanding the excluded packages.
runtime_closure() {
    local -A seen=()
    local queue=("$@") p d
    while [ ${#queue[@]} -gt 0 ]; do
        p=${queue[0]}
        queue=("${queue[@]:1}")
        p=${p%%:*}                      # libfoo:amd64 -> libfoo
        [ -n "${seen[$p]+x}" ] && continue
        seen[$p]=1
        in_list "$p" "${UNIVERSAL_PKGS[@]}" "${UNUSED_PKGS[@]}" && continue
        apt-cache show --no-all-versions "$p" >/dev/null 2>&1 ||
            die "package '$p' not known to apt (run 'apt-get update' first?)"
        echo "$p"
        while read -r d; do queue+=("$d"); done < <(direct_deps "$p")
    done
}

# Debian's update-alternatives links (made by maintainer scripts, which dpkg-deb -x does not
# run) from each package's postinst: "alt PRIORITY LINK TARGET" lines, master and slaves.
# Calls whose words are computed ($var) are skipped: none of them is needed here.
alternatives_of() {
    { dpkg-deb -I "$1" postinst 2>/dev/null || true; } | sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' |
        awk '/update-alternatives/ && /[[:space:]]--install[[:space:]]/ && !/\$/ {
            for (i = 1; i <= NF; i++) {
                if ($i == "--install") { prio = $(i + 4); print "alt", prio, $(i + 1), $(i + 3) }
                if ($i == "--slave") print "alt", prio, $(i + 1), $(i + 3)
            }
        }'
}

# Every DT_NEEDED of every ELF under root must be provided inside root or be universal.
# Prints the highest GLIBC_x.y symbol version the ELFs need.
check_needed_closure() {
    local root=$1 f magic soname missing=() glibc_max=0
    local -A provided=() needed_by=()
    local elfs=()
    while IFS= read -r -d '' f; do
        magic=$(head -c 4 "$f" | od -An -c | tr -d ' ')
        [ "$magic" = '177ELF' ] && elfs+=("$f")
    done < <(find "$root/usr" -type f \( -name '*.so*' -o -path '*/bin/*' \) -print0)
    while IFS= read -r -d '' f; do provided[$(basename "$f")]=1; done \
        < <(find "$root/usr" \( -type f -o -type l \) -name 'lib*.so*' -print0)
    for f in "${elfs[@]}"; do
        soname=$(readelf -d "$f" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
        [ -n "$soname" ] && provided[$soname]=1
    done
    for f in "${elfs[@]}"; do
        while read -r soname; do
            needed_by[$soname]+=" ${f#"$root"}"
        done < <(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
        while read -r soname; do
            [ "$(printf '%s\n%s\n' "$glibc_max" "$soname" | sort -V | tail -1)" = "$soname" ] &&
                glibc_max=$soname
        done < <(readelf -V --wide "$f" | sed -n 's/.*Name: GLIBC_\([0-9.]*\).*/\1/p')
    done
    for soname in "${!needed_by[@]}"; do
        [ -n "${provided[$soname]+x}" ] && continue
        in_list "$soname" "${UNIVERSAL_SONAMES[@]}" && continue
        missing+=("$soname (needed by${needed_by[$soname]})")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        printf 'gpu-deps:   missing: %s\n' "${missing[@]}" >&2
        die "the bundle is not closed: ${#missing[@]} soname(s) neither carried nor universal"
    fi
    echo "$glibc_max"
}

cmd_download() {
    local dir=$1 p f total glibc_needed
    local -a runtime pkgs
    need_cmd apt-get "run 'download' on Debian 12"
    need_cmd dpkg-deb "run 'download' on Debian 12"
    need_cmd readelf "apt-get install binutils"
    need_cmd sha256sum "apt-get install coreutils"
    [ "$(dpkg --print-architecture)" = amd64 ] || refuse "download: this is not an amd64 Debian"
    # shellcheck disable=SC1091
    if ! (. /etc/os-release && [ "${ID:-}" = debian ] && [ "${VERSION_ID:-}" = 12 ]); then
        refuse "download: run on Debian 12 (bookworm): the bundle's glibc floor is its ${GLIBC_FLOOR}"
    fi

    p=$(runtime_closure "${RUNTIME_ROOTS[@]}")    # so that a failure in it stops the script
    mapfile -t runtime <<<"$p"
    pkgs=("${DEV_PKGS[@]}")
    for p in "${runtime[@]}"; do in_list "$p" "${pkgs[@]}" || pkgs+=("$p"); done
    log "carrying ${#pkgs[@]} packages: ${#DEV_PKGS[@]} for the build, ${#runtime[@]} at run time"

    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd -P)
    rm -f "$dir"/*.deb "$dir/$MANIFEST" "$dir/SHA256SUMS"
    # -o APT::Sandbox::User=root: as root, apt's _apt user could not write into DIR
    (cd "$dir" && apt-get download -q -o APT::Sandbox::User=root "${pkgs[@]}") >&2 ||
        die "apt-get download failed"

    {
        echo "# scripts/gpu-deps.sh download, $(date -u +%Y-%m-%dT%H:%MZ), Debian 12 amd64"
        echo "glibc_floor $GLIBC_FLOOR"
        for f in "$dir"/*.deb; do
            p=$(dpkg-deb -f "$f" Package)
            echo "deb $(basename "$f") $p $(dpkg-deb -f "$f" Version)" \
                "$(in_list "$p" "${DEV_PKGS[@]}" && echo build || echo runtime)"
        done
        for f in "$dir"/*.deb; do alternatives_of "$f"; done
    } >"$dir/$MANIFEST.tmp"
    [ "$(grep -c '^deb ' "$dir/$MANIFEST.tmp")" -eq ${#pkgs[@]} ] ||
        die "expected ${#pkgs[@]} .deb files in $dir, found $(grep -c '^deb ' "$dir/$MANIFEST.tmp")"

    # The bundle must be complete: unpack it as `install` would and read every DT_NEEDED.
    local stage
    stage=$(mktemp -d /tmp/gpu-deps-check.XXXXXX)
    # shellcheck disable=SC2064
    trap "rm -rf '$stage'" EXIT
    mv "$dir/$MANIFEST.tmp" "$dir/$MANIFEST"
    (cd "$dir" && sha256sum -- *.deb >SHA256SUMS)
    unpack_all "$dir" "$stage/p"
    glibc_needed=$(check_needed_closure "$stage/p")
    echo "glibc_needed $glibc_needed" >>"$dir/$MANIFEST"
    log "closure checked: every DT_NEEDED is carried or universal; carried ELFs need glibc >= $glibc_needed"

    echo
    printf '%-28s %-28s %8s  %s\n' package version KiB role
    awk '$1 == "deb" { print $3, $4, $2, $5 }' "$dir/$MANIFEST" | sort |
        while read -r p v f role; do
            printf '%-28s %-28s %8d  %s\n' "$p" "$v" $(( $(stat -c %s "$dir/$f") / 1024 )) "$role"
        done
    total=$(cat "$dir"/*.deb "$dir/$MANIFEST" "$dir/SHA256SUMS" | wc -c)
    printf '\ntotal: %d bytes (%.1f MiB) in %s\n' "$total" \
        "$(awk -v t="$total" 'BEGIN { print t / 1048576 }')" "$dir"
    [ "$total" -lt $((MAX_BUNDLE_MIB * 1024 * 1024)) ] ||
        die "bundle is over ${MAX_BUNDLE_MIB} MiB; it would not travel with the work tree"
}

# ---------------------------------------------------------------------------------------------
# install (also used by download's self-check)

# Unpack the data part of one .deb into dest: dpkg-deb when there is one, else ar + tar, else
# python3 (ar and tar in the standard library; .xz and .gz, not .zst). GPU_DEPS_UNPACK=dpkg|ar|
# python forces one (tests).
unpack_deb() {
    local deb=$1 dest=$2 how=${GPU_DEPS_UNPACK:-} tmp member
    if [ -z "$how" ]; then
        if command -v dpkg-deb >/dev/null; then
            how=dpkg
        elif command -v ar >/dev/null && command -v tar >/dev/null; then
            how="ar"
        else
            how=python
        fi
    fi
    case $how in
    dpkg) dpkg-deb -x "$deb" "$dest" ;;
    ar)
        tmp=$(mktemp -d)
        (cd "$tmp" && ar x "$deb")
        member=$(cd "$tmp" && find . -maxdepth 1 -name 'data.tar*' | sed 's|^\./||' | head -1)
        [ -n "$member" ] || die "$deb: no data.tar member"
        case $member in
        data.tar.xz)
            if command -v xz >/dev/null; then
                xz -dc "$tmp/$member" | tar -x -C "$dest"
            else
                rm -rf "$tmp"
                GPU_DEPS_UNPACK=python unpack_deb "$deb" "$dest"
                return
            fi ;;
        data.tar.zst)
            command -v zstd >/dev/null || die "$deb: data.tar.zst needs 'zstd', not found"
            zstd -dc "$tmp/$member" | tar -x -C "$dest" ;;
        data.tar.gz) gzip -dc "$tmp/$member" | tar -x -C "$dest" ;;
        data.tar) tar -x -C "$dest" -f "$tmp/$member" ;;
        *) die "$deb: unknown member $member" ;;
        esac
        rm -rf "$tmp" ;;
    python)
        command -v python3 >/dev/null || die "no dpkg-deb, ar+tar or python3 to unpack $deb"
        python3 - "$deb" "$dest" <<'EOF'
import io, sys, tarfile
deb, dest = sys.argv[1], sys.argv[2]
data = open(deb, "rb").read()
if data[:8] != b"!<arch>\n":
    sys.exit(f"{deb}: not an ar archive")
off = 8
while off + 60 <= len(data):
    name = data[off:off + 16].decode().strip().rstrip("/")
    size = int(data[off + 48:off + 58])
    if name.startswith("data.tar"):
        if name.endswith(".zst"):
            sys.exit(f"{deb}: {name} needs zstd, which python3 cannot read")
        body = io.BytesIO(data[off + 60:off + 60 + size])
        with tarfile.open(fileobj=body, mode="r:*") as t:
            if hasattr(tarfile, "fully_trusted_filter"):
                t.extractall(dest, filter="fully_trusted")  # our own packages, links kept as is
            else:
                t.extractall(dest)
        sys.exit(0)
    off += 60 + size + (size & 1)
sys.exit(f"{deb}: no data.tar member")
EOF
        ;;
    *) die "GPU_DEPS_UNPACK=$how: expected dpkg, ar or python" ;;
    esac
}

# Unpack every .deb of dir into prefix (made afresh) and make it self-contained: /lib content
# into /usr/lib (merged-/usr layout), absolute symlinks and alternatives pointed into prefix,
# dangling development links removed, .pc files rewritten to prefix paths.
unpack_all() {
    local dir=$1 prefix=$2 f l t d link target n
    mkdir -p "$prefix"
    (cd "$dir" && sha256sum --quiet -c SHA256SUMS) || die "$dir: checksums do not match SHA256SUMS"
    while read -r _ f _; do
        unpack_deb "$dir/$f" "$prefix"
    done < <(grep '^deb ' "$dir/$MANIFEST")
    rm -rf "$prefix/usr/share/doc" "$prefix/usr/share/man" "$prefix/usr/share/lintian" \
        "$prefix/usr/share/info"

    # Debian 12 ships some libraries in /lib (zlib1g, libcom-err2, ...): merge them into /usr,
    # as on the (merged-/usr) systems they were built for.
    for d in lib lib64 bin sbin; do
        if [ -d "$prefix/$d" ] && [ ! -L "$prefix/$d" ]; then
            mkdir -p "$prefix/usr/$d"
            cp -a "$prefix/$d/." "$prefix/usr/$d/"
            rm -rf "${prefix:?}/$d"
        fi
    done

    # update-alternatives links, highest priority first; first target that exists wins.
    local -A done_link=()
    while read -r _ _ link target; do      # alt PRIORITY LINK TARGET
        [ -n "${done_link[$link]+x}" ] && continue
        [ -e "$prefix$target" ] || continue
        mkdir -p "$(dirname "$prefix$link")"
        ln -sfn "$prefix$target" "$prefix$link"
        done_link[$link]=1
    done < <(grep '^alt ' "$dir/$MANIFEST" | sort -k2,2nr -s)

    # Absolute symlinks (libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13): into prefix.
    while IFS= read -r -d '' l; do
        t=$(readlink "$l")
        case $t in
        /lib/* | /lib64/* | /bin/* | /sbin/*) t=/usr$t ;;
        esac
        ln -sfn "$prefix$t" "$l"
    done < <(find "$prefix" -type l -lname '/*' ! -lname "$prefix/*" -print0)

    # Links whose target is not carried (libhdf5_cpp.so, libpcre2-16.so, h5pcc, ...): removed,
    # so that no search stops at a dangling name.
    n=$(find "$prefix" -xtype l | wc -l)
    find "$prefix" -xtype l -delete
    [ "$n" -eq 0 ] || log "removed $n links to parts not carried (C++/Fortran HDF5, PCRE2-16/32, ...)"

    # .pc files: /usr -> prefix/usr; Requires.private naming modules not carried dropped (they
    # only matter to a static link, and pkg-config fails --cflags over them).
    while IFS= read -r -d '' f; do
        sed -E -i "s#(^|[=[:space:]\"'])(-[IL])?/usr(/|\$|[[:space:]])#\\1\\2$prefix/usr\\3#g" "$f"
        while read -r l; do
            for d in $(echo "${l#*:}" | tr ',' ' ' | sed -E 's/[<>=!]+ *[^ ]+//g'); do
                if ! find "$prefix/usr" -name "$d.pc" | grep -q .; then
                    sed -i "s|^Requires.private:.*|# &  (not carried: only a static link needs it)|" "$f"
                    break
                fi
            done
        done < <(grep '^Requires.private:' "$f" || true)
    done < <(find "$prefix/usr" -type f -name '*.pc' -print0)
}

version_ge() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$2" ]; }  # $1 >= $2

glibc_version() {
    local v
    v=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }') || true
    if [ -z "$v" ]; then
        v=$(ldd --version 2>/dev/null | head -1 | awk '{ print $NF }') || true
    fi
    echo "$v"
}

cmd_install() {
    local dir=$1 prefix=$2 have floor needed libdir f l missing bad
    if [ ! -f "$dir/$MANIFEST" ] || [ ! -f "$dir/SHA256SUMS" ]; then
        refuse "install: $dir has no $MANIFEST / SHA256SUMS: run 'download' into it first"
    fi
    dir=$(cd "$dir" && pwd -P)
    [ "$(uname -m)" = x86_64 ] || refuse "install: the bundle is for x86_64, this is $(uname -m)"
    floor=$(awk '$1 == "glibc_floor" { print $2 }' "$dir/$MANIFEST")
    floor=${floor:-$GLIBC_FLOOR}
    have=$(glibc_version)
    [ -n "$have" ] || refuse "install: cannot tell this machine's glibc version" \
        "(getconf GNU_LIBC_VERSION, ldd --version); a glibc >= $floor is needed"
    if ! version_ge "$have" "$floor"; then
        # The measured need (the highest GLIBC_x.y any carried ELF asks for) may be lower than
        # Debian 12's own glibc; GPU_DEPS_GLIBC_OK=1 accepts a glibc between the two.
        needed=$(awk '$1 == "glibc_needed" { print $2 }' "$dir/$MANIFEST")
        if [ "${GPU_DEPS_GLIBC_OK:-}" = 1 ] && [ -n "$needed" ] && version_ge "$have" "$needed"
        then
            log "warning: glibc $have < $floor (Debian 12's), >= $needed (what the carried" \
                "ELFs ask for): going on, as GPU_DEPS_GLIBC_OK=1 says"
        else
            refuse "install: this machine's glibc is $have; the bundle's Debian 12 libraries" \
                "need >= $floor${needed:+ (their symbols ask for >= $needed:}" \
                "${needed:+GPU_DEPS_GLIBC_OK=1 accepts $needed..$floor at your own risk)}"
        fi
    fi

    case $prefix in
    /*) ;;
    *) prefix=$(pwd -P)/$prefix ;;
    esac
    prefix=${prefix%/}
    [[ $prefix =~ ^/[A-Za-z0-9._/+-]+$ ]] ||
        refuse "install: PREFIX '$prefix': use letters, digits and ._/+- only (it goes into .pc files and CMake lists)"
    if [ -e "$prefix" ] && [ -n "$(ls -A "$prefix" 2>/dev/null)" ]; then
        [ -f "$prefix/.gpu-deps-prefix" ] ||
            refuse "install: $prefix exists, is not empty and was not made by this script"
        rm -rf "${prefix:?}"/* "$prefix"/.gpu-deps-prefix
    fi
    log "glibc $have; unpacking $(grep -c '^deb ' "$dir/$MANIFEST") packages into $prefix"
    mkdir -p "$prefix"
    echo "made by scripts/gpu-deps.sh install from $dir" >"$prefix/.gpu-deps-prefix"
    unpack_all "$dir" "$prefix"

    libdir=$prefix/usr/lib/$ARCH_TRIPLET
    # pkg-config as a wrapper, so the carried pkgconf finds its libpkgconf and the carried .pc
    # files whether or not env.sh was sourced (CMake runs it from cmake.args's path).
    mkdir -p "$prefix/bin"
    cat >"$prefix/bin/pkg-config" <<EOF
#!/bin/sh
# The carried pkgconf over the carried .pc files only (scripts/gpu-deps.sh install).
PKG_CONFIG_LIBDIR=$libdir/pkgconfig:$prefix/usr/lib/pkgconfig:$prefix/usr/share/pkgconfig
export PKG_CONFIG_LIBDIR
unset PKG_CONFIG_SYSROOT_DIR
LD_LIBRARY_PATH=$libdir\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} exec $prefix/usr/bin/pkgconf "\$@"
EOF
    chmod 755 "$prefix/bin/pkg-config"
    ln -sfn pkg-config "$prefix/bin/pkgconf"

    cat >"$prefix/env.sh" <<EOF
# Source me (. $prefix/env.sh) before configuring, building or running sentinel with the
# libraries carried by scripts/gpu-deps.sh (sourcing twice adds nothing twice).
export SENTINEL_DEPS_PREFIX=$prefix
case ":\${PATH:-}:" in *":$prefix/bin:"*) ;; *) PATH=$prefix/bin\${PATH:+:\$PATH} ;; esac
case ":\${CMAKE_PREFIX_PATH:-}:" in *":$prefix/usr:"*) ;;
*) CMAKE_PREFIX_PATH=$prefix/usr\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH} ;; esac
for _gd in $libdir $libdir/hdf5/serial; do
    case ":\${LD_LIBRARY_PATH:-}:" in *":\$_gd:"*) ;;
    *) LD_LIBRARY_PATH=\${LD_LIBRARY_PATH:+\$LD_LIBRARY_PATH:}\$_gd ;; esac
done
unset _gd
export PATH CMAKE_PREFIX_PATH LD_LIBRARY_PATH
export PKG_CONFIG=$prefix/bin/pkg-config
export PKG_CONFIG_LIBDIR=$libdir/pkgconfig:$prefix/usr/lib/pkgconfig:$prefix/usr/share/pkgconfig
export PKG_CONFIG_PATH=
unset PKG_CONFIG_SYSROOT_DIR
export HDF5_ROOT=$libdir/hdf5/serial
EOF

    cat >"$prefix/cmake.args" <<EOF
-DPKG_CONFIG_EXECUTABLE=$prefix/bin/pkg-config
-DZLIB_INCLUDE_DIR=$prefix/usr/include
-DZLIB_LIBRARY=$libdir/libz.so
-DCURL_NO_CURL_CMAKE=ON
-DCURL_INCLUDE_DIR=$prefix/usr/include/$ARCH_TRIPLET
-DCURL_LIBRARY=$libdir/libcurl.so
-DHDF5_ROOT=$libdir/hdf5/serial
-DHDF5_NO_FIND_PACKAGE_CONFIG_FILE=ON
-DHDF5_PREFER_PARALLEL=OFF
EOF

    # Checks: every file the build names is there, pkg-config answers for every module, and
    # every carried library loads its dependencies (ldd: none 'not found').
    missing=()
    for f in include/cjson/cJSON.h include/pcre2.h include/utf8proc.h include/microhttpd.h \
        include/zlib.h include/$ARCH_TRIPLET/curl/curl.h include/hdf5/serial/hdf5.h \
        include/$ARCH_TRIPLET/openblas-pthread/cblas.h \
        lib/$ARCH_TRIPLET/libcjson.so lib/$ARCH_TRIPLET/libpcre2-8.so \
        lib/$ARCH_TRIPLET/libutf8proc.so lib/$ARCH_TRIPLET/libmicrohttpd.so \
        lib/$ARCH_TRIPLET/libz.so lib/$ARCH_TRIPLET/libcurl.so \
        lib/$ARCH_TRIPLET/hdf5/serial/libhdf5.so lib/$ARCH_TRIPLET/libopenblas.so \
        lib/$ARCH_TRIPLET/libopenblas.so.0 lib/$ARCH_TRIPLET/openblas-pthread/libopenblas.so; do
        l=$(readlink -f "$prefix/usr/$f" 2>/dev/null) || l=
        [ -n "$l" ] && [ -e "$l" ] && [[ $l == "$prefix"/* ]] || missing+=("$prefix/usr/$f")
    done
    [ ${#missing[@]} -eq 0 ] || die "install: not resolving inside $prefix: ${missing[*]}"
    for l in libcjson libpcre2-8 libutf8proc libmicrohttpd openblas libcurl zlib hdf5; do
        "$prefix/bin/pkg-config" --cflags --libs "$l" >/dev/null ||
            die "install: pkg-config fails for $l"
    done
    bad=$(find "$libdir" -type f -name 'lib*.so*' -exec env \
        LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd {} + 2>&1 |
        awk '/^\// { f = $1 } /not found/ { print f, $0 }') || true
    [ -z "$bad" ] || die "install: carried libraries with unresolved dependencies:
$bad"

    # Carried sonames that this system also has: with env.sh sourced, processes get the carried
    # (Debian 12) copy. Normally harmless; the first suspect if a tool misbehaves after sourcing.
    local shadow=()
    if command -v ldconfig >/dev/null || [ -x /sbin/ldconfig ]; then
        local cache
        cache=$( (command -v ldconfig >/dev/null && ldconfig -p) || /sbin/ldconfig -p) || cache=
        while IFS= read -r -d '' f; do
            l=$(basename "$f")
            grep -q "^[[:space:]]*$l (.*x86-64" <<<"$cache" && shadow+=("$l")
        done < <(find "$libdir" -maxdepth 1 -name 'lib*.so.*[0-9]' -type l -print0)
    fi
    [ ${#shadow[@]} -eq 0 ] ||
        log "note: with env.sh sourced, these carried libraries take the place of the system's: ${shadow[*]}"

    log "installed into $prefix ($(du -sh "$prefix" | cut -f1)); next:"
    echo "  . $prefix/env.sh"
    echo "  cmake -S . -B build \$(cat $prefix/cmake.args) [-DCMAKE_PREFIX_PATH=\$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')]"
}

# ---------------------------------------------------------------------------------------------
# gloo: a PyTorch wheel ships c10d's ProcessGroupGloo.hpp but not the Gloo headers it includes,
# so sentinel's Gloo backend (docs/aten.md) needs them from a checkout of pytorch/gloo (ideally
# the commit of the wheel's third_party/gloo; the headers c10d includes change rarely). Only
# headers travel: libtorch carries Gloo's code. Gloo's config header is generated as its CMake
# would for a TCP-only build; its switches change no declaration c10d's header uses.

cmd_gloo() {
    local srcdir=$1 dest=$2
    [ -f "$srcdir/gloo/config.h.in" ] || die "$srcdir: not a pytorch/gloo checkout (no gloo/config.h.in)"
    local major minor patch
    major=$(sed -n 's/^set(GLOO_VERSION_MAJOR \([0-9]*\)).*/\1/p' "$srcdir/CMakeLists.txt")
    minor=$(sed -n 's/^set(GLOO_VERSION_MINOR \([0-9]*\)).*/\1/p' "$srcdir/CMakeLists.txt")
    patch=$(sed -n 's/^set(GLOO_VERSION_PATCH \([0-9]*\)).*/\1/p' "$srcdir/CMakeLists.txt")
    [ -n "$major" ] && [ -n "$minor" ] && [ -n "$patch" ] || die "$srcdir/CMakeLists.txt: no GLOO_VERSION_*"
    rm -rf "$dest/include/gloo"
    mkdir -p "$dest/include"
    (cd "$srcdir" && find gloo -name '*.h' -print0 | tar cf - --null -T -) | tar xf - -C "$dest/include"
    sed -e "s/@GLOO_VERSION_MAJOR@/$major/; s/@GLOO_VERSION_MINOR@/$minor/; s/@GLOO_VERSION_PATCH@/$patch/" \
        -e 's/^#cmakedefine01 GLOO_HAVE_TRANSPORT_TCP$/#define GLOO_HAVE_TRANSPORT_TCP 1/' \
        -e 's/^#cmakedefine01 \(GLOO_[A-Z_]*\)$/#define \1 0/' \
        "$srcdir/gloo/config.h.in" > "$dest/include/gloo/config.h"
    log "Gloo $major.$minor.$patch headers ($(find "$dest/include/gloo" -name '*.h' | wc -l) files) in $dest/include: configure with -DSENTINEL_GLOO_INCLUDE_DIR=$dest/include"
}

# ---------------------------------------------------------------------------------------------

case ${1:-} in
-h | --help | help) usage ;;
download)
    [ $# -eq 2 ] || { usage >&2; exit 2; }
    cmd_download "$2" ;;
install)
    [ $# -eq 3 ] || { usage >&2; exit 2; }
    cmd_install "$2" "$3" ;;
gloo)
    [ $# -eq 3 ] || { usage >&2; exit 2; }
    cmd_gloo "$2" "$3" ;;
*)
    usage >&2
    exit 2 ;;
esac
