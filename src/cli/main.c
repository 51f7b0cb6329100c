int main(void) { return 0; } /* in progress */
