# Sourced by build_llama_cpp.sh and build_llama_server.sh: the llama-cpp-python sdist, unpacked.
# unpack_llama_sdist PYTHON VERSION DIR -> prints the unpacked project's path (llama.cpp is in vendor/llama.cpp).
unpack_llama_sdist() {
    "$1" -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$2" -d "$3" >&2
    tar -xzf "$3"/llama_cpp_python-*.tar.gz -C "$3"
    echo "$3"/llama_cpp_python-*/
}
