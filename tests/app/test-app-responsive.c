#include "app-test.h"
int main(int argc, char **argv) { app_test_init(&argc, &argv); return g_test_run(); }
