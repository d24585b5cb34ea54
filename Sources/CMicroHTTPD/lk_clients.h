// Open connections per client address, shared by the event loops of one server.
//
// libmicrohttpd counts per-address connections per daemon; Lookout runs one daemon per
// event loop (see lk_mhd.c), so the limit is kept here, once for all of them.
#ifndef LK_CLIENTS_H
#define LK_CLIENTS_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#define LK_CLIENT_BUCKETS 1024

typedef struct lk_client lk_client;

/// An address as 16 bytes: IPv4 as its IPv4-mapped IPv6 form, so both stacks agree.
typedef struct lk_client_key {
    uint8_t bytes[16];
} lk_client_key;

typedef struct lk_clients {
    pthread_mutex_t lock;
    unsigned int limit;  // 0: no limit, nothing is counted
    lk_client *buckets[LK_CLIENT_BUCKETS];
} lk_clients;

void lk_clients_init(lk_clients *clients, unsigned int limit);
void lk_clients_destroy(lk_clients *clients);

/// The key of a client address; returns 0 for anything but IPv4 or IPv6.
int lk_client_key_of(const struct sockaddr *address, socklen_t length, lk_client_key *key);

/// A hash of the address (FNV-1a over its 16 bytes).
uint32_t lk_client_key_hash(const lk_client_key *key);

/// Counts one more connection from `key` unless it already has `limit`.
/// Returns 1 when counted, 0 when at the limit (or out of memory).
int lk_clients_add(lk_clients *clients, const lk_client_key *key);

/// Counts one connection from `key` fewer.
void lk_clients_remove(lk_clients *clients, const lk_client_key *key);

#endif
