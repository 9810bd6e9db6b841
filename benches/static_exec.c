/* The emit benchmark's floor: a statically linked program that reads its stdin to the end
 * and exits 0, as a hook command must. Built by benches/producer.rs with the system cc. */
#include <unistd.h>

int main(void) {
    char buf[4096];
    while (read(0, buf, sizeof buf) > 0) {
    }
    return 0;
}
