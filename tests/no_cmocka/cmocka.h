/* Put first on the include path of the C test programs when configure found
 * no CMocka: the libraries build without it, make check does not. */
#error "make check needs CMocka, which configure did not find: install the Debian package libcmocka-dev and run configure again"
