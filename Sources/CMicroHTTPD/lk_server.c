// The event loops of one server and its life: start, quiesce, stop.
//
// Each thread runs an epoll loop of its own over the shared listening socket, an eventfd
// that other threads wake it with, and libmicrohttpd daemons of its own, its shards: 8,
// then one more for each 32 connections it holds, up to 256. It accepts connections itself
// and hands each to the shard holding the fewest (MHD_add_connection), and calls MHD_run,
// which never blocks, for each shard with something to do, found in bit sets rather than
// by visiting every shard. Why not libmicrohttpd's own loops:
// - a resume makes libmicrohttpd 0.9.75 walk every suspended connection of the daemon, a
//   cache miss each: with 10,000 held long-polls on one daemon that walk was most of a
//   selective wake; spread over shards of ~32, each walk covers a few;
// - its internal loop takes at most 128 events per epoll_wait and, when it gets exactly 128,
//   waits again with its full timeout before handling them, so a burst of 128 requests that
//   become ready together waited for the next event or the idle timeout (HTTPServerTests
//   "a full epoll batch");
// - accepting here, one thread woken per connection (EPOLLEXCLUSIVE), keeps the shards from
//   all waking for each new connection, and applies the per-client limit once for all;
//   the thread that accepts hands the connection to its client's thread, chosen by its
//   address, or to the one holding the fewest when that one holds too many more.

#define _GNU_SOURCE  // pthread_setname_np, accept4
#include "lk_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

enum {
    LK_EVENT_LISTEN = 0,
    LK_EVENT_WAKE = 1,
    LK_EVENT_LOOP = 2,  // + the loop's index
    LK_ACCEPT_BATCH = 64,
    LK_FIRST_DAEMONS = 8,
    LK_CONNECTIONS_PER_DAEMON = 32,
    LK_BALANCE_SLACK = 8,
};

// The thread this is, if it runs a server's loop: a wake from its own thread (a write that
// woke a poll held here) needs no eventfd, only another run at once.
static __thread lk_thread *lk_running_thread;

// Set on a thread that is no event loop when it wakes a loop whose thread last ran on the
// same CPU; lk_mhd_yield_to_loops yields then, and clears it.
static __thread int lk_yield_due;

static void lk_thread_wake(lk_thread *thread) {
    if (lk_running_thread == NULL && atomic_load_explicit(&thread->cpu, memory_order_relaxed) == sched_getcpu()) {
        lk_yield_due = 1;
    }
    if (atomic_exchange(&thread->wake_pending, 1) == 0) {
        uint64_t one = 1;
        ssize_t written = write(thread->wake_fd, &one, sizeof(one));
        (void)written;  // EAGAIN only when the counter is full, and then it is readable
    }
}

// A daemon's bit in a thread's set (lk_server.h).
static uint64_t lk_bit(unsigned int index) {
    return UINT64_C(1) << (index % 64);
}

static void lk_set_add(uint64_t *set, unsigned int index) {
    set[index / 64] |= lk_bit(index);
}

static void lk_set_remove(uint64_t *set, unsigned int index) {
    set[index / 64] &= ~lk_bit(index);
}

void lk_loop_wake(lk_loop *loop) {
    lk_thread *thread = loop->thread;
    if (thread == lk_running_thread) {
        lk_set_add(thread->run_again, loop->index);
        return;
    }
    atomic_fetch_or(&thread->resumed[loop->index / 64], lk_bit(loop->index));
    lk_thread_wake(thread);
}

void lk_loop_guard(lk_loop *loop) {
    lk_set_add(loop->thread->guarded, loop->index);
}

// The first daemon in `set` at or after `from`; LK_MAX_DAEMONS_PER_THREAD for none. A loop
// over a set with it sees the bits set ahead of where it is, as a loop over every daemon
// testing each one's flag would.
static unsigned int lk_set_next(const uint64_t *set, unsigned int from) {
    for (unsigned int word = from / 64; word < LK_LOOP_SET_WORDS; word++) {
        uint64_t bits = set[word];
        if (word == from / 64) bits &= ~UINT64_C(0) << (from % 64);
        if (bits != 0) return word * 64 + (unsigned int)__builtin_ctzll(bits);
    }
    return LK_MAX_DAEMONS_PER_THREAD;
}

#define LK_FOR_EACH(index, set) \
    for (unsigned int index = lk_set_next(set, 0); index < LK_MAX_DAEMONS_PER_THREAD; index = lk_set_next(set, index + 1))

// Microseconds on the clock libmicrohttpd keeps its timeouts by, and milliseconds.
static uint64_t lk_clock_us(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000;
}

static uint64_t lk_clock_ms(void) {
    return lk_clock_us() / 1000;
}

// Asks libmicrohttpd when it next wants the daemon run, for its own timeouts or work it has
// pending. What it answers from (its pending flags, its ready list, its timeout lists)
// changes only inside MHD_run and MHD_add_connection, so it is asked after each of those,
// not on every pass of the thread's loop over all its daemons. Work pending now makes it
// run on the next pass; a time makes the thread's earliest due time no later.
static void lk_loop_update_due(lk_loop *loop) {
    lk_thread *thread = loop->thread;
    MHD_UNSIGNED_LONG_LONG next = 0;
    loop->due_ms = 0;
    if (MHD_get_timeout(loop->daemon, &next) != MHD_YES) return;
    if (next == 0) {
        lk_set_add(thread->run_again, loop->index);
        return;
    }
    loop->due_ms = lk_clock_ms() + (next > INT_MAX ? INT_MAX : (uint64_t)next);
    if (thread->due_ms == 0 || loop->due_ms < thread->due_ms) thread->due_ms = loop->due_ms;
}

// Runs a daemon once, and at once again when that run queued a resumed request's answer,
// which libmicrohttpd writes only on its next run.
static void lk_loop_run(lk_loop *loop) {
    lk_set_remove(loop->thread->run_again, loop->index);
    loop->answer_queued = 0;
    MHD_run(loop->daemon);
    if (loop->answer_queued) MHD_run(loop->daemon);
    lk_loop_update_due(loop);
}

void lk_loop_send_woken(lk_loop *current) {
    lk_thread *thread = current->thread;
    if (thread != lk_running_thread || thread->sending_woken) return;
    // Another daemon's run inside this one's request is safe: libmicrohttpd keeps no state
    // across daemons, and the handler that woke the polls has returned. Not deeper than
    // one level: a request answered inside that run leaves its woken polls to the loop.
    thread->sending_woken = 1;
    LK_FOR_EACH(index, thread->run_again) {
        if (index != current->index) lk_loop_run(&thread->loops[index]);
    }
    thread->sending_woken = 0;
}

// A writer's commit wakes the loop holding the write's request and its polls, and that
// loop polls through the commit (lk_thread_wait). When the kernel runs the writer on the
// loop's CPU, the loop runs again only once the writer sleeps: on the writer's CPU a
// resumed poll's answer waited 22-53 us on average for the rest of the writer's work (the
// write's answer, freeing what the commit replaced), on the other CPU 6-12
// (Benchmarks/README.md, stop 49). Yielding then hands the CPU to the loop, which gives it
// back when it polls again. Only then, and once per batch: beside CPU-bound processes a
// yield can hand the CPU to one of them instead, for a whole time slice.
void lk_mhd_yield_to_loops(void) {
    if (!lk_yield_due) return;
    lk_yield_due = 0;
    sched_yield();
}

struct lk_task {
    void *task;
    struct lk_task *next;
};

unsigned int lk_loop_thread_index(const lk_loop *loop) {
    return (unsigned int)(loop->thread - loop->server->threads);
}

int lk_mhd_on_thread(const lk_mhd_server *server, unsigned int thread) {
    return thread < server->thread_count && lk_running_thread == &server->threads[thread];
}

int lk_mhd_post(lk_mhd_server *server, unsigned int index, void *task) {
    struct lk_task *node = malloc(sizeof(*node));
    if (node == NULL || index >= server->thread_count) {
        free(node);
        return -1;
    }
    lk_thread *thread = &server->threads[index];
    node->task = task;
    node->next = atomic_load_explicit(&thread->tasks, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&thread->tasks, &node->next, node, memory_order_release,
                                                  memory_order_relaxed)) {
    }
    lk_thread_wake(thread);
    return 0;
}

// Hands the tasks posted so far to on_tasks, oldest first.
static void lk_thread_run_tasks(lk_thread *thread) {
    struct lk_task *node = atomic_exchange_explicit(&thread->tasks, NULL, memory_order_acquire);
    size_t count = 0;
    for (struct lk_task *each = node; each != NULL; each = each->next) count++;
    if (count == 0 || thread->server->config.on_tasks == NULL) return;
    void *stack_tasks[256];
    void **tasks = count <= 256 ? stack_tasks : malloc(count * sizeof(void *));
    size_t index = count;
    while (node != NULL) {
        struct lk_task *next = node->next;
        if (tasks != NULL) {
            tasks[--index] = node->task;
        } else {
            thread->server->config.on_tasks(thread->server->config.context, &node->task, 1);  // out of memory
        }
        free(node);
        node = next;
    }
    if (tasks == NULL) return;
    thread->server->config.on_tasks(thread->server->config.context, tasks, count);
    if (tasks != stack_tasks) free(tasks);
}

static void lk_thread_listen(lk_thread *thread, int on) {
    if (thread->listening == on || thread->quiesced) return;
    struct epoll_event event = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.u64 = LK_EVENT_LISTEN};
    if (epoll_ctl(thread->epoll_fd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, thread->server->listen_fd, &event) == 0) {
        thread->listening = on;
    }
}

// Every connection is guarded from its start (lk_guard.h); its guard is its socket context.
static void lk_on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                             enum MHD_ConnectionNotificationCode code) {
    lk_loop *loop = cls;
    lk_thread *thread = loop->thread;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        lk_guard_conn *guard = lk_guard_open(loop, connection);
        *socket_context = guard;
        atomic_fetch_add_explicit(&thread->connections, 1, memory_order_relaxed);
        thread->loop_connections[loop->index]++;
        if (guard == NULL) {
            // Unguarded bytes must never reach libmicrohttpd: close it unread.
            const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
            if (info != NULL) shutdown(info->connect_fd, SHUT_RDWR);
        } else if (thread->has_reservation) {
            thread->has_reservation = 0;
            lk_guard_set_counted(guard);
        }
        return;
    }
    unsigned int held = atomic_fetch_sub_explicit(&thread->connections, 1, memory_order_relaxed) - 1;
    thread->loop_connections[loop->index]--;
    if (held < thread->connection_limit && thread->listen_again_ms == 0) {
        lk_thread_listen(thread, 1);
    }
    lk_guard_conn *guard = *socket_context;
    *socket_context = NULL;
    if (guard == NULL) {
        return;
    }
    if (lk_guard_counted(guard)) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        lk_client_key key;
        if (info != NULL && lk_client_key_of(info->client_addr, sizeof(struct sockaddr_in6), &key)) {
            lk_clients_remove(&loop->server->clients, &key);
        }
    }
    lk_guard_close(guard);
}

// The shard holding the fewest connections. Their counts sit together, apart from the
// shards, so that finding it touches a few cache lines, not every shard's memory.
static lk_loop *lk_thread_pick(lk_thread *thread) {
    unsigned int best = 0;
    for (unsigned int index = 1; index < thread->loop_count; index++) {
        if (thread->loop_connections[index] < thread->loop_connections[best]) best = index;
    }
    return &thread->loops[best];
}

// A connection accepted by one thread for another, with its client's reservation.
struct lk_handoff {
    struct lk_handoff *next;
    int fd;
    socklen_t length;
    struct sockaddr_storage address;
    int has_reservation;
    lk_client_key reservation;
};

// Connections a thread holds or has been handed.
static unsigned int lk_thread_load(lk_thread *thread) {
    return atomic_load_explicit(&thread->connections, memory_order_relaxed) +
           atomic_load_explicit(&thread->incoming, memory_order_relaxed);
}

// The thread to take a connection: `preferred`, unless it is full or holds
// LK_BALANCE_SLACK more than the one holding the fewest; then that one. NULL when every
// thread is full.
static lk_thread *lk_server_pick(lk_mhd_server *server, lk_thread *preferred) {
    lk_thread *fewest = NULL;
    unsigned int fewest_load = 0;
    for (unsigned int index = 0; index < server->thread_count; index++) {
        lk_thread *thread = &server->threads[index];
        unsigned int load = lk_thread_load(thread);
        if (load < thread->connection_limit && (fewest == NULL || load < fewest_load)) {
            fewest = thread;
            fewest_load = load;
        }
    }
    unsigned int load = lk_thread_load(preferred);
    if (fewest != NULL && load < preferred->connection_limit && load < fewest_load + LK_BALANCE_SLACK) {
        return preferred;
    }
    return fewest;
}

// The thread a client's connections go to first: one chosen by its address, so that a
// client's long-poll and the write that wakes it share a loop, and the write answers the
// poll without waking another thread (~50 µs of a single wake on this machine's two
// vCPUs: Benchmarks/README.md). Without an address (not IPv4 or IPv6), the accepting one.
static lk_thread *lk_server_thread_of(lk_thread *accepting, const lk_client_key *key, int has_key) {
    lk_mhd_server *server = accepting->server;
    return has_key ? &server->threads[lk_client_key_hash(key) % server->thread_count] : accepting;
}

static int lk_thread_start_loop(lk_thread *thread, char *error, size_t error_size);

// Hands an accepted connection to one of this thread's daemons; its reservation, if it
// has one, is taken by the connection-started notice inside, or released here. Past its
// first daemons a thread starts another for each LK_CONNECTIONS_PER_DAEMON connections it
// holds, up to its limit, so that a resume walks at most about that many suspended
// connections, while a server holding few connections (a test process runs many) keeps
// few descriptors.
static void lk_thread_add(lk_thread *thread, int fd, const struct sockaddr_storage *address, socklen_t length,
                          int has_reservation, const lk_client_key *reservation) {
    unsigned int held = atomic_load_explicit(&thread->connections, memory_order_relaxed);
    if (thread->loop_count < thread->loop_capacity && held >= thread->loop_count * LK_CONNECTIONS_PER_DAEMON) {
        char error[128];
        // Out of descriptors: the daemons already started take the connections, and the
        // thread stops trying to start more.
        if (lk_thread_start_loop(thread, error, sizeof(error)) != 0) thread->loop_capacity = thread->loop_count;
    }
    thread->has_reservation = has_reservation;
    if (has_reservation) thread->reservation = *reservation;
    // On failure libmicrohttpd has closed the socket.
    lk_loop *loop = lk_thread_pick(thread);
    (void)MHD_add_connection(loop->daemon, fd, (const struct sockaddr *)address, length);
    lk_loop_update_due(loop);
    if (thread->has_reservation) {
        lk_clients_remove(&thread->server->clients, &thread->reservation);
        thread->has_reservation = 0;
    }
}

// Adds the connections other threads accepted for this one.
static void lk_thread_take_handoffs(lk_thread *thread) {
    struct lk_handoff *node = atomic_exchange_explicit(&thread->handoffs, NULL, memory_order_acquire);
    while (node != NULL) {
        struct lk_handoff *next = node->next;
        lk_thread_add(thread, node->fd, &node->address, node->length, node->has_reservation, &node->reservation);
        atomic_fetch_sub_explicit(&thread->incoming, 1, memory_order_relaxed);
        free(node);
        node = next;
    }
}

// Closes the connections handed to a thread that has stopped, releasing their reservations.
static void lk_thread_drop_handoffs(lk_thread *thread) {
    struct lk_handoff *node = atomic_exchange_explicit(&thread->handoffs, NULL, memory_order_acquire);
    while (node != NULL) {
        struct lk_handoff *next = node->next;
        if (node->has_reservation) lk_clients_remove(&thread->server->clients, &node->reservation);
        close(node->fd);
        free(node);
        node = next;
    }
}

// Posts an accepted connection to `target`; -1 when out of memory (nothing posted).
static int lk_thread_hand(lk_thread *target, int fd, const struct sockaddr_storage *address, socklen_t length,
                          int has_reservation, const lk_client_key *reservation) {
    struct lk_handoff *node = malloc(sizeof(*node));
    if (node == NULL) return -1;
    *node = (struct lk_handoff){.fd = fd, .length = length, .address = *address, .has_reservation = has_reservation};
    if (has_reservation) node->reservation = *reservation;
    atomic_fetch_add_explicit(&target->incoming, 1, memory_order_relaxed);
    node->next = atomic_load_explicit(&target->handoffs, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&target->handoffs, &node->next, node, memory_order_release,
                                                  memory_order_relaxed)) {
    }
    lk_thread_wake(target);
    return 0;
}

// Accepts what is waiting, up to a batch, and hands each connection to its client's
// thread (lk_server_thread_of, lk_server_pick). Whichever thread the kernel wakes accepts
// (EPOLLEXCLUSIVE), often the same one for a burst of connections; the slack keeps the
// threads within LK_BALANCE_SLACK of each other, so that even one address's crowd (a
// load generator, clients behind one NAT) is served on every core.
static void lk_thread_accept(lk_thread *thread) {
    lk_mhd_server *server = thread->server;
    for (int count = 0; count < LK_ACCEPT_BATCH; count++) {
        lk_thread *room = lk_server_pick(server, thread);
        if (room == NULL) {
            // Every thread is full: a connection closing on this one listens again.
            lk_thread_listen(thread, 0);
            return;
        }
        struct sockaddr_storage address;
        socklen_t length = sizeof(address);
        int fd = accept4(server->listen_fd, (struct sockaddr *)&address, &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                // Out of descriptors or memory: the connection stays queued; try again
                // shortly rather than spin on a socket that stays readable.
                lk_thread_listen(thread, 0);
                thread->listen_again_ms = lk_guard_now_ms() + 100;
            }
            return;
        }
        lk_client_key key;
        int has_key = lk_client_key_of((struct sockaddr *)&address, length, &key);
        int has_reservation = server->clients.limit > 0 && has_key;
        if (has_reservation && !lk_clients_add(&server->clients, &key)) {
            close(fd);
            continue;
        }
        lk_thread *target = lk_server_pick(server, lk_server_thread_of(thread, &key, has_key));
        if (target == NULL) target = room;  // filled meanwhile: libmicrohttpd's own limit refuses it
        if (target == thread || lk_thread_hand(target, fd, &address, length, has_reservation, &key) != 0) {
            lk_thread_add(thread, fd, &address, length, has_reservation, &key);
        }
    }
}

static void lk_thread_quiesce(lk_thread *thread) {
    lk_mhd_server *server = thread->server;
    lk_thread_listen(thread, 0);
    thread->quiesced = 1;
    pthread_mutex_lock(&server->lock);
    server->quiesced_threads++;
    pthread_cond_broadcast(&server->thread_quiesced);
    pthread_mutex_unlock(&server->lock);
}

// Shortens `timeout` (milliseconds, -1 for none) to `candidate`.
static int lk_sooner(int timeout, long long candidate) {
    if (candidate < 0) return timeout;
    int value = candidate > INT_MAX ? INT_MAX : (int)candidate;
    return timeout < 0 || value < timeout ? value : timeout;
}

struct lk_mhd_awaited {
    atomic_int count;
};

lk_mhd_awaited *lk_mhd_awaited_create(void) {
    lk_mhd_awaited *awaited = malloc(sizeof(*awaited));
    if (awaited != NULL) atomic_init(&awaited->count, 0);
    return awaited;
}

void lk_mhd_awaited_add(lk_mhd_awaited *awaited, int delta) {
    atomic_fetch_add_explicit(&awaited->count, delta, memory_order_relaxed);
}

int lk_mhd_awaited_count(const lk_mhd_awaited *awaited) {
    return atomic_load_explicit(&((lk_mhd_awaited *)awaited)->count, memory_order_relaxed);
}

void lk_mhd_awaited_free(lk_mhd_awaited *awaited) {
    free(awaited);
}

// Whether the thread should stay awake for an awaited answer: one is, and it holds
// suspended requests (the request awaiting it, or polls its commit may wake).
static int lk_awaits(lk_thread *thread) {
    const lk_mhd_awaited *awaited = thread->server->config.awaited;
    return awaited != NULL && lk_mhd_awaited_count(awaited) > 0 &&
           atomic_load_explicit(&thread->suspended, memory_order_relaxed) > 0;
}

// How long, in microseconds, the thread polls before it sleeps, as things are now.
static uint64_t lk_spin_limit(lk_thread *thread, unsigned int spin) {
    if (lk_awaits(thread)) return (uint64_t)spin * LK_AWAIT_SPIN_FACTOR;
    return thread->spin_armed ? spin : 0;
}

// Records the CPU the thread runs on, for another thread that wakes it (lk_thread_wake).
static void lk_thread_note_cpu(lk_thread *thread) {
    atomic_store_explicit(&thread->cpu, sched_getcpu(), memory_order_relaxed);
}

// epoll_wait for the thread's events, polling for up to spin_microseconds first when its
// last wait was short. A thread asleep in epoll_wait is woken by the kernel when a request
// arrives, and on a virtual machine an idle virtual CPU is halted: waking it is a trip
// through the hypervisor, 30-80 us here, paid again by every request of a client that
// sends its next request as soon as it has the answer (Benchmarks/README.md, "Polling
// before sleeping"). Polling costs CPU only while a thread would otherwise sleep, and only
// after a wait short enough that the next event was likely to come within the spin.
//
// A thread holding suspended requests also polls, for up to LK_AWAIT_SPIN_FACTOR spins,
// while answers are awaited from another thread (lk_mhd_config.awaited): a write's
// commit, whose end resumes its request and the polls it woke on loops that would
// otherwise sleep through it (Benchmarks/README.md, stop 44).
//
// Polling is for idle CPUs. When CPU-bound processes share them, each sched_yield can hand
// the CPU to one for a whole time slice, and pushes this thread's own turn back (the
// kernel's EEVDF scheduler moves a yielding thread's deadline a slice later each time):
// beside two such processes a durable single wake took 2.8 ms at p50 with polling, 0.6
// without (Benchmarks/README.md, stop 49). A pass that took longer than
// LK_CONTENDED_PASS_US shows it, and the thread sleeps in epoll_wait instead, as it does
// with polling off, for LK_CONTENDED_PAUSE_US; a woken sleeper is run promptly. Keeping
// the short poll for the next request, and pausing only the long one for an awaited
// answer, left that single wake at 2.8 ms; a memory-mode single wake beside the same two
// processes is slower at p50 without the poll (120-128 -> 149-156 us), faster at p99
// (4.5-4.6 -> 3.2-3.6 ms).
static int lk_thread_wait(lk_thread *thread, struct epoll_event *events, int capacity, int timeout) {
    unsigned int spin = thread->server->config.spin_microseconds;
    uint64_t start = lk_clock_us();
    if (timeout == 0 || spin == 0 || start < thread->spin_paused_until_us) {
        int count = epoll_wait(thread->epoll_fd, events, capacity, timeout);
        lk_thread_note_cpu(thread);
        return count;
    }
    uint64_t elapsed = 0;
    while (elapsed < lk_spin_limit(thread, spin)) {
        int count = epoll_wait(thread->epoll_fd, events, capacity, 0);
        lk_thread_note_cpu(thread);
        if (count > 0) atomic_fetch_add_explicit(&thread->spin_hits, 1, memory_order_relaxed);
        if (count != 0) return count;  // an event (or an error, seen by the caller)
        sched_yield();                 // a client waiting for this CPU runs first
        uint64_t before = elapsed;
        elapsed = lk_clock_us() - start;
        if (elapsed - before > LK_CONTENDED_PASS_US && !thread->server->config.keep_polling_when_contended) {
            thread->spin_paused_until_us = start + elapsed + LK_CONTENDED_PAUSE_US;
            atomic_fetch_add_explicit(&thread->spin_pauses, 1, memory_order_relaxed);
            break;
        }
    }
    if (elapsed > 0) start = lk_clock_us();
    int count = epoll_wait(thread->epoll_fd, events, capacity, timeout);
    lk_thread_note_cpu(thread);
    thread->spin_armed = lk_clock_us() - start <= (uint64_t)spin * LK_SPIN_ARM_FACTOR;
    return count;
}

static void *lk_thread_run(void *argument) {
    lk_thread *thread = argument;
    lk_mhd_server *server = thread->server;
    lk_running_thread = thread;
    sigset_t pipe_signal;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, NULL);
    struct epoll_event events[64];
    while (!atomic_load(&server->stopping)) {
        if (atomic_load(&server->quiesce_requested) && !thread->quiesced) {
            lk_thread_quiesce(thread);
        }
        int timeout = -1;
        uint64_t now = 0;
        if (thread->listen_again_ms != 0) {
            now = lk_guard_now_ms();
            if (now >= thread->listen_again_ms) {
                thread->listen_again_ms = 0;
                lk_thread_listen(thread, 1);
            } else {
                timeout = lk_sooner(timeout, (long long)(thread->listen_again_ms - now));
            }
        }
        if (atomic_load_explicit(&thread->tasks, memory_order_relaxed) != NULL ||
            atomic_load_explicit(&thread->handoffs, memory_order_relaxed) != NULL) {
            timeout = 0;
        }
        for (unsigned int word = 0; word < LK_LOOP_SET_WORDS; word++) {
            if (thread->run_again[word] != 0) timeout = 0;
        }
        uint64_t clock_ms = lk_clock_ms();
        if (thread->due_ms != 0) {
            timeout = lk_sooner(timeout, thread->due_ms > clock_ms ? (long long)(thread->due_ms - clock_ms) : 0);
        }
        if (thread->lingering.count > 0) {
            if (now == 0) now = lk_guard_now_ms();
            timeout = lk_sooner(timeout, lk_linger_sweep(&thread->lingering, now));
        }
        LK_FOR_EACH(index, thread->guarded) {
            lk_loop *loop = &thread->loops[index];
            if (loop->deadlines != NULL) {
                if (now == 0) now = lk_guard_now_ms();
                timeout = lk_sooner(timeout, lk_guard_sweep(loop, now));
            }
            if (loop->deadlines == NULL) lk_set_remove(thread->guarded, index);
        }
        int count = lk_thread_wait(thread, events, 64, timeout);
        uint64_t run[LK_LOOP_SET_WORDS] = {0};
        if (count < 0 && errno != EINTR) {
            perror("lookout: epoll_wait");
            usleep(10000);
        }
        for (int index = 0; index < count; index++) {
            uint64_t tag = events[index].data.u64;
            if (tag == LK_EVENT_LISTEN) {
                lk_thread_accept(thread);
            } else if (tag >= LK_LINGER_EVENT) {
                lk_linger_readable(&thread->lingering, tag);
            } else if (tag == LK_EVENT_WAKE) {
                // Drain, then clear the flag: a wake after the clear writes again, and one
                // before it set its loop's flags before the runs below look at them.
                uint64_t value;
                ssize_t got = read(thread->wake_fd, &value, sizeof(value));
                (void)got;
                atomic_store(&thread->wake_pending, 0);
            } else {
                lk_set_add(run, (unsigned int)(tag - LK_EVENT_LOOP));
            }
        }
        // After the wake flag is cleared: a task or connection posted later wakes the
        // thread again.
        lk_thread_take_handoffs(thread);
        lk_thread_run_tasks(thread);
        // Only the daemons with something to do: events, a resume, work libmicrohttpd
        // left pending (a resumed connection's answer is written on the run after the one
        // that queued it) or a timeout of its own that has come.
        for (unsigned int word = 0; word < LK_LOOP_SET_WORDS; word++) {
            run[word] |= thread->run_again[word];
            if (atomic_load_explicit(&thread->resumed[word], memory_order_relaxed) != 0) {
                run[word] |= atomic_exchange(&thread->resumed[word], 0);
            }
        }
        clock_ms = lk_clock_ms();
        if (thread->due_ms != 0 && thread->due_ms <= clock_ms) {
            // The only visit to every daemon: those due run, the others' earliest is next.
            thread->due_ms = 0;
            for (unsigned int index = 0; index < thread->loop_count; index++) {
                lk_loop *loop = &thread->loops[index];
                if (loop->due_ms == 0) continue;
                if (loop->due_ms <= clock_ms) {
                    lk_set_add(run, index);
                } else if (thread->due_ms == 0 || loop->due_ms < thread->due_ms) {
                    thread->due_ms = loop->due_ms;
                }
            }
        }
        LK_FOR_EACH(index, run) lk_loop_run(&thread->loops[index]);
    }
    return NULL;
}

// libmicrohttpd's memory per connection, resident for as long as the connection lives (a
// held long-poll's included): the largest head the guard gives it (its target is "/", and
// trailers are left out: lk_head.h), a header record (56 bytes in 0.9.75, 64 in the pool)
// for each field, and room for the response's header fields, which it writes into what is
// left once it has shrunk its read buffer to the head. With the fields read listed, 2.75
// KiB in all: a typical head (a token, a cursor: ~500 bytes) leaves ~1.8 KiB for the
// answer's fields, the largest head 512 bytes; an answer whose fields do not fit is a JSON
// 500 (lk_mhd.c, lk_head_fits), not a dropped connection. RequestHeadersTests sends the
// largest head; with every field kept, what a head at the limit needs (RequestFramingTests).
static size_t lk_connection_memory(const lk_mhd_server *server) {
    if (server->kept_headers != NULL) return server->kept_head_max + server->kept_fields_max * 64 + 512;
    return server->kept_head_max + LK_FRAME_MAX_TRAILER_BYTES + (server->kept_fields_max + LK_FRAME_MAX_TRAILER_FIELDS) * 64 + 4096;
}

static struct MHD_Daemon *lk_start_daemon(lk_mhd_server *server, lk_loop *loop, unsigned int connection_limit) {
    const lk_mhd_config *config = &server->config;
    struct MHD_OptionItem options[] = {
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)lk_on_uri, loop},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)lk_on_completed, loop},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)lk_on_connection, loop},
        {MHD_OPTION_CONNECTION_LIMIT, connection_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, config->idle_timeout_seconds, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)server->connection_memory, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    // MHD_USE_TURBO does three things in libmicrohttpd 0.9.75 (daemon.c, connection.c):
    // - a connection added is read at once instead of entering the daemon's epoll set, and
    //   enters it only when a read finds nothing: a long-poll whose request came with the
    //   connection is suspended without ever being added, so it costs no epoll_ctl to add
    //   it and none to take it out on suspending;
    // - a connection is closed without shutdown(SHUT_WR) first; where the client may still
    //   be writing, the guard ends the stream itself and drains it (lk_linger.h);
    // - an added socket is checked to be close-on-exec (one more fcntl), which ours are.
    unsigned int flags = MHD_USE_EPOLL | MHD_USE_TURBO | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET;
    return MHD_start_daemon(flags, 0, NULL, NULL, lk_on_access, loop, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

// Binds and listens on the configured address; returns the socket or -1.
static int lk_listen(lk_mhd_server *server, char *error, size_t error_size) {
    struct sockaddr_storage address;
    memset(&address, 0, sizeof(address));
    struct sockaddr_in *v4 = (struct sockaddr_in *)&address;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&address;
    socklen_t length;
    if (inet_pton(AF_INET, server->bind_address, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(server->config.port);
        length = sizeof(*v4);
    } else if (inet_pton(AF_INET6, server->bind_address, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(server->config.port);
        length = sizeof(*v6);
    } else {
        snprintf(error, error_size, "'%s' is not a numeric IPv4 or IPv6 address", server->bind_address);
        return -1;
    }
    int fd = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    // The unspecified IPv6 address listens for IPv4 too; a specific one only for itself.
    int v6only = address.ss_family == AF_INET6 && !IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        (address.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)) != 0) ||
        bind(fd, (struct sockaddr *)&address, length) != 0 || listen(fd, SOMAXCONN) != 0 ||
        getsockname(fd, (struct sockaddr *)&address, &length) != 0) {
        snprintf(error, error_size, "cannot listen on [%s]:%u (%s)", server->bind_address,
                 (unsigned)server->config.port, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    server->port = ntohs(address.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
    return fd;
}

// Stops the threads, then every daemon, then frees the server.
static void lk_server_free(lk_mhd_server *server) {
    atomic_store(&server->stopping, 1);
    for (unsigned int index = 0; index < server->thread_count; index++) {
        if (server->threads[index].thread_started) lk_thread_wake(&server->threads[index]);
    }
    for (unsigned int index = 0; index < server->thread_count; index++) {
        if (server->threads[index].thread_started) pthread_join(server->threads[index].thread, NULL);
    }
    if (server->listen_fd >= 0) close(server->listen_fd);
    for (unsigned int index = 0; index < server->thread_count; index++) {
        lk_thread *thread = &server->threads[index];
        lk_thread_drop_handoffs(thread);
        if (server->config.on_tasks != NULL) lk_thread_run_tasks(thread);
        for (unsigned int shard = 0; thread->loops != NULL && shard < thread->loop_count; shard++) {
            if (thread->loops[shard].daemon != NULL) MHD_stop_daemon(thread->loops[shard].daemon);
        }
        lk_linger_close_all(&thread->lingering);
        free(thread->loops);
        if (thread->wake_fd >= 0) close(thread->wake_fd);
        if (thread->epoll_fd >= 0) close(thread->epoll_fd);
    }
    lk_clients_destroy(&server->clients);
    free(server->kept_headers);
    pthread_cond_destroy(&server->thread_quiesced);
    pthread_mutex_destroy(&server->lock);
    free(server);
}

// Starts one more daemon on a thread and adds it to the thread's epoll set; returns 0 on
// success. Only the thread itself does this once it runs: the others never read its loops.
static int lk_thread_start_loop(lk_thread *thread, char *error, size_t error_size) {
    unsigned int index = thread->loop_count;
    lk_loop *loop = &thread->loops[index];
    *loop = (lk_loop){.server = thread->server, .thread = thread, .index = index, .epoll_fd = -1};
    loop->daemon = lk_start_daemon(thread->server, loop, thread->connection_limit);
    const union MHD_DaemonInfo *info =
        loop->daemon != NULL ? MHD_get_daemon_info(loop->daemon, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
    loop->epoll_fd = info != NULL ? info->epoll_fd : -1;
    struct epoll_event ready = {.events = EPOLLIN, .data.u64 = LK_EVENT_LOOP + index};
    if (loop->epoll_fd < 0 || epoll_ctl(thread->epoll_fd, EPOLL_CTL_ADD, loop->epoll_fd, &ready) != 0) {
        snprintf(error, error_size, "cannot start libmicrohttpd's daemon %u: %s", index, strerror(errno));
        if (loop->daemon != NULL) MHD_stop_daemon(loop->daemon);
        loop->daemon = NULL;
        return -1;
    }
    thread->loop_count = index + 1;
    atomic_store_explicit(&thread->daemons_started, thread->loop_count, memory_order_relaxed);
    return 0;
}

// Makes a thread's epoll set, eventfd and first daemons; returns 0 on success.
static int lk_thread_setup(lk_mhd_server *server, lk_thread *thread, unsigned int limit, char *error,
                           size_t error_size) {
    unsigned int capacity = server->config.daemons_per_thread > 0 ? server->config.daemons_per_thread
                                                                    : LK_MAX_DAEMONS_PER_THREAD;
    if (capacity > LK_MAX_DAEMONS_PER_THREAD) capacity = LK_MAX_DAEMONS_PER_THREAD;
    thread->connection_limit = limit;
    thread->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    thread->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    thread->loops = calloc(capacity, sizeof(lk_loop));
    struct epoll_event wake = {.events = EPOLLIN, .data.u64 = LK_EVENT_WAKE};
    if (thread->epoll_fd < 0 || thread->wake_fd < 0 || thread->loops == NULL ||
        epoll_ctl(thread->epoll_fd, EPOLL_CTL_ADD, thread->wake_fd, &wake) != 0) {
        snprintf(error, error_size, "cannot start an event loop: %s", strerror(errno));
        return -1;
    }
    thread->loop_capacity = capacity;
    // A few to start with, so that the first connections each have one: a write and the
    // poll it wakes on another daemon of the thread are answered poll first
    // (lk_loop_send_woken), which a daemon cannot do for two of its own connections.
    while (thread->loop_count < LK_FIRST_DAEMONS && thread->loop_count < capacity) {
        if (lk_thread_start_loop(thread, error, error_size) != 0) return -1;
    }
    lk_thread_listen(thread, 1);
    return thread->listening ? 0 : -1;
}

lk_mhd_server *lk_mhd_start(const lk_mhd_config *config, char *error, size_t error_size) {
    unsigned int thread_count = config->thread_count > 1 ? config->thread_count : 1;
    lk_mhd_server *server = calloc(1, sizeof(*server) + thread_count * sizeof(lk_thread));
    if (server == NULL) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    server->config = *config;
    snprintf(server->bind_address, sizeof(server->bind_address), "%s",
             config->bind_address != NULL ? config->bind_address : "::");
    server->config.bind_address = server->bind_address;
    if (server->config.spin_microseconds > LK_MHD_MAX_SPIN_MICROSECONDS) {
        server->config.spin_microseconds = LK_MHD_MAX_SPIN_MICROSECONDS;
    }
    atomic_init(&server->suspended, 0);
    atomic_init(&server->stopping, 0);
    atomic_init(&server->quiesce_requested, 0);
    atomic_init(&server->draining, 0);
    server->listen_fd = -1;
    pthread_mutex_init(&server->lock, NULL);
    pthread_cond_init(&server->thread_quiesced, NULL);
    lk_clients_init(&server->clients, config->per_ip_connection_limit);
    size_t max_head = config->max_head_bytes > 0 ? config->max_head_bytes : 16384;
    server->limits = (lk_frame_limits){
        .max_head = max_head,
        .max_target = max_head < 8192 ? max_head : 8192,
        .max_fields = LK_MAX_FIELDS,
        .max_parameters = LK_MAX_PARAMETERS,
        .max_body = config->max_body_bytes,
    };
    if (config->request_headers != NULL) {
        size_t size = 1;
        while (config->request_headers[size - 1] != '\0' || config->request_headers[size] != '\0') size++;
        server->kept_headers = malloc(size + 1);
        if (server->kept_headers != NULL) memcpy(server->kept_headers, config->request_headers, size + 1);
        server->kept_head_max = LK_MHD_KEPT_HEAD_BYTES;
        server->kept_fields_max = LK_MHD_KEPT_FIELDS;
    } else {
        server->kept_head_max = max_head;
        server->kept_fields_max = LK_MAX_FIELDS;
    }
    server->config.request_headers = NULL;  // the copy is kept_headers
    server->connection_memory = lk_connection_memory(server);
    // The longest incomplete element the guard holds back: a head or trailer section just
    // under its limit, or a chunk-size line (1 KiB), with room to spare.
    server->stash_capacity = (max_head > LK_FRAME_MAX_TRAILER_BYTES ? max_head : LK_FRAME_MAX_TRAILER_BYTES) + 2048;
    server->request_timeout_ms =
        (uint64_t)(config->request_timeout_seconds > 0 ? config->request_timeout_seconds : 20) * 1000;
    server->thread_count = thread_count;
    for (unsigned int index = 0; index < thread_count; index++) {
        lk_thread *thread = &server->threads[index];
        thread->server = server;
        thread->wake_fd = -1;
        thread->epoll_fd = -1;
        atomic_init(&thread->wake_pending, 0);
        atomic_init(&thread->connections, 0);
        atomic_init(&thread->incoming, 0);
        atomic_init(&thread->daemons_started, 0);
        atomic_init(&thread->spin_hits, 0);
        atomic_init(&thread->spin_pauses, 0);
        atomic_init(&thread->cpu, -1);
        atomic_init(&thread->suspended, 0);
        atomic_init(&thread->handoffs, NULL);
        for (unsigned int word = 0; word < LK_LOOP_SET_WORDS; word++) atomic_init(&thread->resumed[word], 0);
    }
    server->listen_fd = lk_listen(server, error, error_size);
    if (server->listen_fd < 0) {
        lk_server_free(server);
        return NULL;
    }
    for (unsigned int index = 0; index < thread_count; index++) {
        // The connection limit is split between the threads.
        unsigned int limit = config->connection_limit / thread_count +
                             (index < config->connection_limit % thread_count ? 1 : 0);
        if (lk_thread_setup(server, &server->threads[index], limit > 0 ? limit : 1, error, error_size) != 0) {
            lk_server_free(server);
            return NULL;
        }
    }
    for (unsigned int index = 0; index < thread_count; index++) {
        lk_thread *thread = &server->threads[index];
        int failed = pthread_create(&thread->thread, NULL, lk_thread_run, thread);
        if (failed != 0) {
            snprintf(error, error_size, "cannot start a thread: %s", strerror(failed));
            lk_server_free(server);
            return NULL;
        }
        thread->thread_started = 1;
        pthread_setname_np(thread->thread, "lookout-http");
    }
    return server;
}

uint16_t lk_mhd_port(const lk_mhd_server *server) {
    return server->port;
}

void lk_mhd_quiesce(lk_mhd_server *server) {
    atomic_store(&server->draining, 1);
    pthread_mutex_lock(&server->lock);
    if (!atomic_exchange(&server->quiesce_requested, 1)) {
        for (unsigned int index = 0; index < server->thread_count; index++) {
            lk_thread_wake(&server->threads[index]);
        }
    }
    while (server->quiesced_threads < server->thread_count) {
        pthread_cond_wait(&server->thread_quiesced, &server->lock);
    }
    if (server->listen_fd >= 0) {
        close(server->listen_fd);  // no thread polls it any more
        server->listen_fd = -1;
    }
    pthread_mutex_unlock(&server->lock);
}

unsigned int lk_mhd_thread_suspended(const lk_mhd_server *server, unsigned int thread) {
    if (thread >= server->thread_count) return 0;
    return atomic_load_explicit(&((lk_mhd_server *)server)->threads[thread].suspended, memory_order_relaxed);
}

unsigned int lk_mhd_suspended_count(const lk_mhd_server *server) {
    return atomic_load(&((lk_mhd_server *)server)->suspended);
}

unsigned int lk_mhd_thread_connections(const lk_mhd_server *server, unsigned int thread) {
    if (thread >= server->thread_count) return 0;
    return atomic_load(&((lk_mhd_server *)server)->threads[thread].connections);
}

unsigned int lk_mhd_thread_daemons(const lk_mhd_server *server, unsigned int thread) {
    if (thread >= server->thread_count) return 0;
    return atomic_load(&((lk_mhd_server *)server)->threads[thread].daemons_started);
}

unsigned long long lk_mhd_thread_spin_hits(const lk_mhd_server *server, unsigned int thread) {
    if (thread >= server->thread_count) return 0;
    return atomic_load_explicit(&((lk_mhd_server *)server)->threads[thread].spin_hits, memory_order_relaxed);
}

unsigned long long lk_mhd_thread_spin_pauses(const lk_mhd_server *server, unsigned int thread) {
    if (thread >= server->thread_count) return 0;
    return atomic_load_explicit(&((lk_mhd_server *)server)->threads[thread].spin_pauses, memory_order_relaxed);
}

void lk_mhd_stop(lk_mhd_server *server) {
    lk_server_free(server);
}
