"""External repositories of percpu, all taken from Debian 12 packages.

Bazel 4.2.3 (bazel-bootstrap) references none of Debian's rule sets by
default, and would try to download rules_cc, rules_java and
remote_coverage_tools. Each is provided here from a local directory.

For a consumer workspace: every repository is defined only if the
workspace has not defined it already (maybe()), so a WORKSPACE that brings
its own @rules_cc, @boost, ... keeps them; call percpu_debian_repositories()
after your own definitions. Every path is an argument, for systems that
install these packages elsewhere. What percpu needs from each repository:
  @rules_cc              //cc:defs.bzl (cc_library, cc_test, ...)
  @boost                 //:atomic, a cc_library through which
                         #include <boost/atomic/atomic_ref.hpp> works
                         (Boost >= 1.73; rules_boost's @boost//:atomic fits);
                         used by //primitives:u64_field in C++17 builds
  @doctest               //:doctest and //:doctest_main (percpu's own tests)
  @benchmark             //:benchmark (percpu's bench/ only)
  @rules_java, @remote_coverage_tools  what Bazel 4.2.3 itself asks for
"""

load("@bazel_tools//tools/build_defs/repo:utils.bzl", "maybe")

_RULES_CC_DIR = "/usr/share/bazel/rules/cc"
_RULES_JAVA_DIR = "/usr/share/bazel/rules/java"

def _debian_rules_cc_impl(rctx):
    """Copies Debian's rules_cc and adapts it to Bazel 4.2.3.

    Debian ships a rules_cc newer than Bazel 4.2.3: two of its rules load
    use_cpp_toolchain() from @bazel_tools, which 4.2.3 lacks. They are
    pointed at the C++ toolchain type directly, which is what that helper
    returns.
    """
    src = rctx.attr.path
    result = rctx.execute(["cp", "-R", src + "/.", "."])
    if result.return_code != 0:
        fail("cannot copy %s (install bazel-rules-cc: tools/setup.sh): %s" %
             (src, result.stderr))
    for f in [
        "cc/private/rules_impl/compiler_flag.bzl",
        "cc/private/rules_impl/cc_flags_supplier.bzl",
    ]:
        text = rctx.read(f)
        text = text.replace(
            '"find_cpp_toolchain", "use_cpp_toolchain")',
            '"find_cpp_toolchain")',
        )
        text = text.replace(
            "use_cpp_toolchain()",
            '["@bazel_tools//tools/cpp:toolchain_type"]',
        )
        rctx.file(f, text)

_debian_rules_cc = repository_rule(
    implementation = _debian_rules_cc_impl,
    attrs = {"path": attr.string(default = _RULES_CC_DIR)},
    local = True,
)

def _coverage_tools_stub_impl(rctx):
    """Satisfies the implicit @remote_coverage_tools dependency of tests.

    Every test rule names a coverage merger; percpu does not run
    `bazel coverage`, so an executable that explains this suffices.
    """
    rctx.file("unsupported.sh", "#!/bin/sh\necho 'percpu: coverage is not configured' >&2\nexit 1\n", executable = True)
    rctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
sh_binary(name = "lcov_merger", srcs = ["unsupported.sh"])
sh_binary(name = "coverage_report_generator", srcs = ["unsupported.sh"])
""")

_coverage_tools_stub = repository_rule(implementation = _coverage_tools_stub_impl)

def percpu_debian_repositories(
        rules_cc_path = _RULES_CC_DIR,
        rules_java_path = _RULES_JAVA_DIR,
        doctest_path = "/usr/include/doctest",
        boost_path = "/usr/include/boost",
        benchmark_path = "/usr"):
    """Defines percpu's external repositories that the workspace lacks.

    Args:
      rules_cc_path: Debian's rules_cc (bazel-rules-cc).
      rules_java_path: Debian's rules_java (bazel-rules-java).
      doctest_path: the directory holding doctest.h (doctest-dev).
      boost_path: the directory holding Boost's headers, i.e. the boost/
        directory itself (libboost-atomic-dev).
      benchmark_path: the prefix with include/benchmark and the
        libbenchmark library (libbenchmark-dev).
    """
    maybe(_debian_rules_cc, name = "rules_cc", path = rules_cc_path)
    maybe(native.local_repository, name = "rules_java", path = rules_java_path)
    maybe(_coverage_tools_stub, name = "remote_coverage_tools")

    # Header-only test framework from doctest-dev. A repository (not the
    # host's /usr/include) so that cross compilers, which do not search
    # /usr/include, find it too.
    maybe(
        native.new_local_repository,
        name = "doctest",
        path = doctest_path,
        build_file = str(Label("//third_party:doctest.BUILD")),
    )

    # Header-only Boost.Atomic (boost::atomic_ref for C++17 builds), from
    # libboost-atomic-dev. Only headers: libboost_atomic is not linked, since
    # the cross targets have no build of it.
    maybe(
        native.new_local_repository,
        name = "boost",
        path = boost_path,
        build_file = str(Label("//third_party:boost.BUILD")),
    )

    # Google Benchmark from libbenchmark-dev (host only: bench/ runs on the
    # host).
    maybe(
        native.new_local_repository,
        name = "benchmark",
        path = benchmark_path,
        build_file = str(Label("//third_party:benchmark.BUILD")),
    )
