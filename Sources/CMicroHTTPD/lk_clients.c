#include "lk_clients.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

struct lk_client {
    lk_client *next;
    lk_client_key key;
    unsigned int count;
};

void lk_clients_init(lk_clients *clients, unsigned int limit) {
    memset(clients, 0, sizeof(*clients));
    pthread_mutex_init(&clients->lock, NULL);
    clients->limit = limit;
}

void lk_clients_destroy(lk_clients *clients) {
    for (size_t index = 0; index < LK_CLIENT_BUCKETS; index++) {
        lk_client *client = clients->buckets[index];
        while (client != NULL) {
            lk_client *next = client->next;
            free(client);
            client = next;
        }
        clients->buckets[index] = NULL;
    }
    pthread_mutex_destroy(&clients->lock);
}

int lk_client_key_of(const struct sockaddr *address, socklen_t length, lk_client_key *key) {
    memset(key, 0, sizeof(*key));
    if (address == NULL) {
        return 0;
    }
    if (address->sa_family == AF_INET && length >= (socklen_t)sizeof(struct sockaddr_in)) {
        key->bytes[10] = 0xff;
        key->bytes[11] = 0xff;
        memcpy(&key->bytes[12], &((const struct sockaddr_in *)address)->sin_addr, 4);
        return 1;
    }
    if (address->sa_family == AF_INET6 && length >= (socklen_t)sizeof(struct sockaddr_in6)) {
        memcpy(key->bytes, &((const struct sockaddr_in6 *)address)->sin6_addr, 16);
        return 1;
    }
    return 0;
}

uint32_t lk_client_key_hash(const lk_client_key *key) {
    uint32_t hash = 2166136261u;  // FNV-1a
    for (size_t index = 0; index < sizeof(key->bytes); index++) {
        hash = (hash ^ key->bytes[index]) * 16777619u;
    }
    return hash;
}

static lk_client **lk_clients_slot(lk_clients *clients, const lk_client_key *key) {
    lk_client **slot = &clients->buckets[lk_client_key_hash(key) % LK_CLIENT_BUCKETS];
    while (*slot != NULL && memcmp(&(*slot)->key, key, sizeof(*key)) != 0) {
        slot = &(*slot)->next;
    }
    return slot;
}

int lk_clients_add(lk_clients *clients, const lk_client_key *key) {
    pthread_mutex_lock(&clients->lock);
    lk_client **slot = lk_clients_slot(clients, key);
    int counted = 0;
    if (*slot == NULL) {
        lk_client *client = calloc(1, sizeof(*client));
        if (client != NULL) {
            client->key = *key;
            client->count = 1;
            *slot = client;
            counted = 1;
        }
    } else if ((*slot)->count < clients->limit) {
        (*slot)->count++;
        counted = 1;
    }
    pthread_mutex_unlock(&clients->lock);
    return counted;
}

void lk_clients_remove(lk_clients *clients, const lk_client_key *key) {
    pthread_mutex_lock(&clients->lock);
    lk_client **slot = lk_clients_slot(clients, key);
    lk_client *client = *slot;
    if (client != NULL && --client->count == 0) {
        *slot = client->next;
        free(client);
    }
    pthread_mutex_unlock(&clients->lock);
}
