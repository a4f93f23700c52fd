// SPDX-License-Identifier: Apache-2.0
// gecko_speedups: the optional compiled helper of the `gecko` Python package.
//
// One function on the receive path: drain(socket, max) takes up to `max`
// frames waiting on a ZeroMQ socket (pyzmq's Socket.underlying: the
// libzmq socket pointer) with zmq_msg_recv(ZMQ_DONTWAIT), as bytes, in
// one call: ~0.1 us a frame against ~0.2 us for pyzmq's recv() in a Python
// loop (docs/BENCHMARKS.md, "Python"), no zmq.Again at the end of a batch
// and no zero-timeout poll before it. The package works without it
// (gecko/node.py falls back to pyzmq), and uses it only when the process
// has one libzmq mapped, the one this module links (libzmq_path()): a
// pyzmq wheel with a libzmq of its own holds sockets of another library.
//
// Built by the project's CMake (python/CMakeLists.txt) into build/python/
// from Debian packages only (python3-dev, libzmq3-dev); never by pip.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <zmq.h>

#include <cstdint>
#include <cstdlib>

namespace {

// drain(socket: int, max: int) -> list[bytes]
PyObject* drain(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "drain(socket, max) takes 2 arguments");
        return nullptr;
    }
    const unsigned long long address = PyLong_AsUnsignedLongLong(args[0]);
    if (address == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return nullptr;
    const Py_ssize_t max = PyLong_AsSsize_t(args[1]);
    if (max == -1 && PyErr_Occurred()) return nullptr;
    if (address == 0) {
        PyErr_SetString(PyExc_ValueError, "drain: no socket (address 0)");
        return nullptr;
    }
    void* socket = reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
    PyObject* frames = PyList_New(0);
    if (frames == nullptr) return nullptr;
    zmq_msg_t msg;
    for (Py_ssize_t i = 0; i < max; ++i) {
        zmq_msg_init(&msg);
        // EAGAIN: drained; ETERM, ENOTSOCK...: closing. Either way the batch ends here.
        if (zmq_msg_recv(&msg, socket, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            break;
        }
        PyObject* frame = PyBytes_FromStringAndSize(static_cast<const char*>(zmq_msg_data(&msg)),
                                                    static_cast<Py_ssize_t>(zmq_msg_size(&msg)));
        zmq_msg_close(&msg);
        if (frame == nullptr || PyList_Append(frames, frame) < 0) {
            Py_XDECREF(frame);
            Py_DECREF(frames);
            return nullptr;
        }
        Py_DECREF(frame);
    }
    return frames;
}

// libzmq_path() -> str: the file of the libzmq this module calls (resolved
// by the dynamic linker), for the caller's check that pyzmq uses the same.
PyObject* libzmq_path(PyObject*, PyObject*) {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&zmq_msg_recv), &info) == 0 || info.dli_fname == nullptr) Py_RETURN_NONE;
    char* resolved = realpath(info.dli_fname, nullptr);
    PyObject* out = PyUnicode_DecodeFSDefault(resolved != nullptr ? resolved : info.dli_fname);
    std::free(resolved);
    return out;
}

PyMethodDef methods[] = {
    {"drain", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(drain)), METH_FASTCALL,
     "drain(socket, max) -> list of bytes: up to max frames waiting on the libzmq socket at address socket "
     "(pyzmq's Socket.underlying), without blocking."},
    {"libzmq_path", libzmq_path, METH_NOARGS, "libzmq_path() -> the libzmq file this module calls, or None."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "gecko_speedups",
    "The optional compiled helper of the gecko package (python/speedups/gecko_speedups.cpp).",
    -1, methods, nullptr, nullptr, nullptr, nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit_gecko_speedups() { return PyModule_Create(&module); }
