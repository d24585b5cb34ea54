// Answers sent piece by piece (server-sent events), held without a thread.
//
// A stream is a libmicrohttpd response whose body comes from a callback (chunked, of
// unknown length). The callback hands over what has been sent to the stream so far; when
// there is nothing, it suspends the connection, and the next lk_mhd_stream_send, from any
// thread, resumes it. So a stream with nothing to say costs a suspended connection, as a
// held long-poll does.

#include "lk_mhd.h"

#include "lk_server.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct lk_mhd_stream {
    pthread_mutex_t lock;
    lk_mhd_server *server;
    lk_loop *loop;
    struct MHD_Connection *connection;
    // Bytes given and not yet handed to libmicrohttpd: buffer[offset..<length].
    char *buffer;
    size_t offset;
    size_t length;
    size_t capacity;
    size_t limit;   // most bytes waiting to be sent; a send past it is refused
    int ending;     // no pieces after those waiting
    int over;       // the response is gone: nothing more is sent
    int suspended;  // the callback suspended the connection for want of bytes
    atomic_uint references;
    void (*closed)(void *owner);
    void *owner;
};

static void lk_stream_unref(lk_mhd_stream *stream) {
    if (atomic_fetch_sub_explicit(&stream->references, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_destroy(&stream->lock);
        free(stream->buffer);
        free(stream);
    }
}

// Resumes the connection if the callback suspended it; under the lock.
static void lk_stream_wake(lk_mhd_stream *stream) {
    if (!stream->suspended) return;
    stream->suspended = 0;
    MHD_resume_connection(stream->connection);
    lk_loop_wake(stream->loop);
}

// libmicrohttpd's callback for the body, on the connection's loop thread.
static ssize_t lk_stream_read(void *cls, uint64_t position, char *out, size_t max) {
    (void)position;
    lk_mhd_stream *stream = cls;
    pthread_mutex_lock(&stream->lock);
    size_t waiting = stream->length - stream->offset;
    if (waiting > 0) {
        size_t count = waiting < max ? waiting : max;
        memcpy(out, stream->buffer + stream->offset, count);
        stream->offset += count;
        if (stream->offset == stream->length) {
            // Drained: an idle stream keeps no buffer (10,000 idle streams kept 5 MiB).
            free(stream->buffer);
            stream->buffer = NULL;
            stream->offset = stream->length = stream->capacity = 0;
        }
        pthread_mutex_unlock(&stream->lock);
        stream->loop->answer_queued = 1;  // written on the daemon's next run: make it now
        return (ssize_t)count;
    }
    if (stream->ending) {
        pthread_mutex_unlock(&stream->lock);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    // Nothing to send: wait without a thread until there is (libmicrohttpd allows a
    // suspend from here, and would otherwise ask again at once, forever).
    stream->suspended = 1;
    MHD_suspend_connection(stream->connection);
    pthread_mutex_unlock(&stream->lock);
    return 0;
}

// libmicrohttpd is done with the response: sent whole, or its connection closed.
static void lk_stream_free(void *cls) {
    lk_mhd_stream *stream = cls;
    pthread_mutex_lock(&stream->lock);
    stream->over = 1;
    pthread_mutex_unlock(&stream->lock);
    atomic_fetch_sub(&stream->server->suspended, 1);
    if (stream->closed != NULL) stream->closed(stream->owner);
    lk_stream_unref(stream);
}

lk_mhd_stream *lk_mhd_stream_create(lk_mhd_request *request, size_t limit, void (*closed)(void *owner),
                                    void *owner) {
    lk_mhd_stream *stream = calloc(1, sizeof(*stream));
    if (stream == NULL) return NULL;
    pthread_mutex_init(&stream->lock, NULL);
    stream->server = lk_mhd_request_server(request);
    stream->loop = lk_mhd_request_loop(request);
    stream->connection = lk_mhd_request_connection(request);
    stream->limit = limit;
    stream->closed = closed;
    stream->owner = owner;
    atomic_init(&stream->references, 2);  // the caller's, and the response's
    return stream;
}

struct MHD_Response *lk_stream_response(lk_mhd_stream *stream) {
    // 1 KiB: libmicrohttpd's hint for the callback's buffer, which it takes from the
    // connection's memory pool in any case.
    struct MHD_Response *response =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, lk_stream_read, stream, lk_stream_free);
    if (response != NULL) atomic_fetch_add(&stream->server->suspended, 1);
    return response;
}

void lk_stream_abandon(lk_mhd_stream *stream) {
    // Never became a response: the response's reference goes with the caller's.
    atomic_fetch_sub_explicit(&stream->references, 1, memory_order_relaxed);
}

// Appends `bytes` to what waits to be sent; under the lock. 0, or -1 when out of memory.
static int lk_stream_append(lk_mhd_stream *stream, const void *bytes, size_t length) {
    size_t waiting = stream->length - stream->offset;
    if (stream->offset > 0 && length > stream->capacity - stream->length) {
        memmove(stream->buffer, stream->buffer + stream->offset, waiting);
        stream->offset = 0;
        stream->length = waiting;
    }
    if (length > stream->capacity - stream->length) {
        size_t capacity = stream->capacity == 0 ? 512 : stream->capacity;
        while (capacity - stream->length < length) capacity *= 2;
        char *grown = realloc(stream->buffer, capacity);
        if (grown == NULL) return -1;
        stream->buffer = grown;
        stream->capacity = capacity;
    }
    memcpy(stream->buffer + stream->length, bytes, length);
    stream->length += length;
    return 0;
}

int lk_mhd_stream_send(lk_mhd_stream *stream, const void *bytes, size_t length) {
    pthread_mutex_lock(&stream->lock);
    int result = -1;
    size_t waiting = stream->length - stream->offset;
    // Past the limit only when nothing waits: one event larger than the limit still goes.
    int over_limit = waiting > 0 && (length > stream->limit || waiting > stream->limit - length);
    if (!stream->over && !stream->ending && !over_limit && lk_stream_append(stream, bytes, length) == 0) {
        lk_stream_wake(stream);
        result = 0;
    }
    pthread_mutex_unlock(&stream->lock);
    return result;
}

void lk_mhd_stream_end(lk_mhd_stream *stream, const void *last, size_t length) {
    pthread_mutex_lock(&stream->lock);
    if (!stream->over && !stream->ending) {
        if (length > 0) (void)lk_stream_append(stream, last, length);
        stream->ending = 1;
        lk_stream_wake(stream);
    }
    pthread_mutex_unlock(&stream->lock);
}

size_t lk_mhd_stream_waiting(lk_mhd_stream *stream) {
    pthread_mutex_lock(&stream->lock);
    size_t waiting = stream->length - stream->offset;
    pthread_mutex_unlock(&stream->lock);
    return waiting;
}

void lk_mhd_stream_release(lk_mhd_stream *stream) {
    lk_stream_unref(stream);
}
