# Included after every project() of the llama-cpp-python build (CMAKE_PROJECT_INCLUDE), so it runs
# after llama-cpp-python forces LLAMA_BUILD_COMMON on: ragexp loads only libllama and libggml
# (through llama-cpp-python's ctypes bindings), never llama.cpp's common library.
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama.cpp: build the common library" FORCE)
