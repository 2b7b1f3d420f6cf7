// The header-check program: its value is in compiling and linking its TUs.
int main() { return 0; }
