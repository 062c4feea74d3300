/* pgshim: see ../postgres.h */
